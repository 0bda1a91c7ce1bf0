// Thread detail (Enter): on the left the two batch histograms and the history graphs, on the
// right run-queue latency, CPUs, preemptors and wakers. Histograms are merged into fewer rows
// (rather than cut) until both columns fit, so the tail of a distribution stays visible.
#include <curses.h>

#include <algorithm>
#include <numeric>

#include "tui/dashboard/input/keymap.hpp"
#include "tui/dashboard/views/draw.hpp"

namespace platoon::dashboard {

namespace {

using SectionColumn = std::vector<const Section*>;

int natural_height(const SectionColumn& col) {
  int h = 0;
  for (const auto* s : col) h += 1 + static_cast<int>(s->lines.size()) + 1;  // title, lines, gap
  return h > 0 ? h - 1 : 0;
}

// Lines each section may use so that the column fits: the tallest gives up a line first.
std::vector<int> budgets(const SectionColumn& col, int height) {
  std::vector<int> b;
  for (const auto* s : col) b.push_back(1 + static_cast<int>(s->lines.size()));
  const int gaps = col.empty() ? 0 : static_cast<int>(col.size()) - 1;
  // Later sections matter less (wakers, preemptors): they give up lines first, down to one
  // line under their title; only then does the tallest section shrink.
  while (std::accumulate(b.begin(), b.end(), 0) + gaps > height) {
    auto it = std::find_if(b.rbegin(), b.rend(), [](int h) { return h > 2; });
    auto victim = it != b.rend() && std::distance(it, b.rend()) > 1 ? std::prev(it.base())
                                                                     : std::max_element(b.begin(), b.end());
    if (*victim <= 1) break;
    --*victim;
  }
  return b;
}

void draw_column(const DrawContext& dc, const SectionColumn& col, int y, int x, int width, int height) {
  DrawContext clip = dc;
  clip.cols = std::min(dc.cols, x + width);
  const auto b = budgets(col, height);
  const int end = y + height;
  for (size_t i = 0; i < col.size() && y < end; ++i) {
    put(clip, y, x, col[i]->title, A_BOLD | dc.attr(kPairTitle, 0));
    for (int j = 1; j < b[i] && y + j < end; ++j) put(clip, y + j, x, col[i]->lines[static_cast<size_t>(j - 1)]);
    y += b[i] + 1;
  }
}

const Section* find(const std::vector<Section>& v, const char* prefix) {
  for (const auto& s : v)
    if (s.title.rfind(prefix, 0) == 0) return &s;
  return nullptr;
}

}  // namespace

void draw_detail(const DrawContext& dc, const TopState& st) {
  draw_header(dc, st, 2);
  const auto* t = st.selected();
  if (!t) {
    put(dc, 3, 0, "the thread is gone (Esc: back)");
    return;
  }
  const auto all = visible_columns(st, static_cast<size_t>(dc.cols), false);
  put(dc, 2, 0, fit(column_header(all, st), static_cast<size_t>(dc.cols)), dc.attr(kPairHeader, A_REVERSE));
  put(dc, 3, 0, row_text(all, *t, st, dc.glyphs), A_BOLD);

  const bool two = dc.cols >= 70;
  const int colw = two ? dc.cols / 2 - 1 : dc.cols;
  const int top = 5, height = dc.lines - 1 - top;
  std::vector<Section> secs;
  SectionColumn left, right;
  for (size_t rows = 10; rows >= 2; --rows) {
    secs = detail_sections(st, *t, static_cast<size_t>(colw), rows, dc.glyphs);
    left.clear();
    right.clear();
    for (const char* name : {"epoll", "queue", "history", "why"})
      if (const auto* s = find(secs, name)) left.push_back(s);
    for (const char* name : {"run-queue", "CPUs", "preempted", "woken"})
      if (const auto* s = find(secs, name)) (two ? right : left).push_back(s);
    // Histograms as tall as fit: the left column whole, run-queue latency in half the right.
    const auto* rq = find(secs, "run-queue");
    const int rq_h = rq ? 1 + static_cast<int>(rq->lines.size()) : 0;
    if (natural_height(left) <= height && rq_h <= (two ? height / 2 : height)) break;
  }
  draw_column(dc, left, top, 0, colw, height);
  if (two) draw_column(dc, right, top, colw + 2, dc.cols - colw - 2, height);
  put(dc, dc.lines - 1, 0, footer_hint(st.replay().active), A_DIM);
}

}  // namespace platoon::dashboard
