#!/usr/bin/env python3
"""Opens HTML pages in headless Chromium, driven through the DevTools protocol by Debian's
chromium-driver and python3-selenium, and says what the page itself shows, as JSON on stdout:

  html_page.py PAGE.html [--screenshot OUT.png] [--timeout S]

  {"ready": true, "ready_ms": 640, "console": ["SEVERE ..."], "requests": ["https://..."],
   "broken_links": ["chart-x"],
   "charts": [{"id": "wait", "kind": "line", "series": 3, "points": 33, "rows": null,
               "absent": null, "drawn": 33, "values": [...]}],
   "screenshot": {"width": 1200, "height": 900, "colours": 812, "ink_pct": 9.5},
   "text": "the text of the page's <main>, closed tables included"}

`drawn` counts the items the Vega view drew (its scenegraph's data marks with finite
coordinates) and `drawn_lines` gives, for line charts, the value each drawn point's position
stands for (the scales inverted): a chart that drew the wrong thing, or nothing, is seen. `requests` lists every request the page made other than the
file itself (from Chromium's performance log). Run it inside `unshare -n` to cut the network (it
refuses to run with any interface but lo, unless HTML_PAGE_ALLOW_NETWORK=1): it brings the
namespace's loopback up (chromedriver listens on it) and nothing else. With `-p -f -m
--mount-proc --kill-child` too, a timeout takes the whole browser down with it.

Selenium rather than puppeteer-core: both are driven through the same protocol, but selenium and
the driver come from Debian (matched to Debian's chromium by the package), so no npm download is
needed on a test machine.
"""
import argparse
import fcntl
import json
import os
import pathlib
import socket
import struct
import sys
import time


def loopback_up():
    # SIOCGIFFLAGS / SIOCSIFFLAGS with IFF_UP: what `ip link set lo up` does, without iproute2.
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        req = struct.pack("16sH", b"lo", 0)
        flags = struct.unpack("16sH", fcntl.ioctl(s, 0x8913, req)[:18])[1]
        if not flags & 1:
            fcntl.ioctl(s, 0x8914, struct.pack("16sH", b"lo", flags | 1))
    finally:
        s.close()


def screenshot_stats(png):
    from PIL import Image  # python3-pil
    import io
    img = Image.open(io.BytesIO(png)).convert("RGB")
    w, h = img.size
    small = img.resize((max(1, w // 2), max(1, h // 2)))
    pixels = list(small.getdata())
    ink = sum(1 for p in pixels if sum(p) < 3 * 235)
    return {"width": w, "height": h, "colours": len(set(pixels)), "ink_pct": round(100.0 * ink / len(pixels), 2)}


INVENTORY = """
const done = arguments[arguments.length - 1];
const r = window.platoonReport;
if (!r) { done({ready: false, error: 'window.platoonReport is not set'}); return; }
// What each view drew, from its scenegraph: the items of its data marks (role 'mark', not axes
// or legends) with finite coordinates, and for lines the value each item's position stands for.
function drawn(view) {
  const scale = (n) => { try { return view.scale(n); } catch (e) { return null; } };
  const xs = scale('x'), ys = scale('y');
  let count = 0;
  const lines = [];
  (function walk(node) {
    if (!node || !node.items) return;
    const data = node.role === 'mark' && ['line', 'area', 'rect'].includes(node.marktype);
    for (const it of node.items) {
      // A datum with a null y is a gap in a line, not a point.
      if (data && Number.isFinite(it.x) && Number.isFinite(it.y) && !(it.datum && it.datum.y === null)) {
        count += 1;
        if (node.marktype === 'line' && xs && ys && xs.invert && it.datum)
          lines.push({s: it.datum.s, x: xs.invert(it.x), y: ys.invert(it.y)});
      }
      if (it.items) for (const child of it.items) walk(child);
    }
  })(view.scenegraph().root);
  return {count, lines};
}
r.ready.then(() => {
  const broken = [...document.querySelectorAll('a[href^="#"]')].map((a) => a.getAttribute('href').slice(1))
    .filter((id) => !document.getElementById(id));
  done({ready: true, ready_ms: performance.now(), text: document.querySelector('main').textContent, broken_links: broken,
        charts: r.charts.map((c) => {
          const d = c.view ? drawn(c.view) : {count: null, lines: null};
          return {id: c.id, kind: c.kind || null, series: c.series, points: c.points,
                  rows: c.rows === undefined ? null : c.rows, absent: c.absent || null,
                  drawn: d.count, drawn_lines: d.lines, values: c.values, counts: c.counts || null};
        })});
}, (e) => done({ready: false, error: String(e)}));
"""


def only_loopback():
    # In `unshare -n` the namespace has lo and nothing else: the network really is cut.
    names = [n for _, n in socket.if_nameindex()]
    if names != ["lo"]:
        sys.exit(f"html_page: the network is not cut: interfaces {names}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("page")
    ap.add_argument("--screenshot")
    ap.add_argument("--timeout", type=float, default=30)
    a = ap.parse_args()
    if os.environ.get("HTML_PAGE_ALLOW_NETWORK") != "1":
        only_loopback()
    try:
        loopback_up()
    except OSError as e:
        print(f"html_page: cannot bring loopback up: {e}", file=sys.stderr)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--hide-scrollbars", "--window-size=1200,900", "--no-first-run", "--disable-extensions",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--user-data-dir=" + os.environ.get("HTML_PAGE_PROFILE", "/tmp/html-page-profile")):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    try:
        driver.set_page_load_timeout(a.timeout)
        driver.set_script_timeout(a.timeout)
        url = pathlib.Path(os.path.abspath(a.page)).as_uri()
        driver.get(url)
        out = driver.execute_async_script(INVENTORY)
        if a.screenshot:
            # The whole page: the window made as tall as the document.
            height = driver.execute_script("return document.documentElement.scrollHeight")
            driver.set_window_size(1200, min(int(height) + 50, 16000))
            time.sleep(0.2)
            png = driver.get_screenshot_as_png()
            with open(a.screenshot, "wb") as f:
                f.write(png)
            out["screenshot"] = screenshot_stats(png)
        # Read last: whatever the screenshot's resize set off is in them too.
        requests = []
        for e in driver.get_log("performance"):
            m = json.loads(e["message"])["message"]
            if m.get("method") == "Network.requestWillBeSent":
                u = m["params"]["request"]["url"]
                # Chromium's own pages (the new tab it opens with) are not the report's.
                if u != url and not u.startswith(("data:", "chrome:", "chrome-untrusted:", "devtools:")):
                    requests.append(u)
        out["requests"] = requests
        out["console"] = [f"{e['level']} {e['message']}" for e in driver.get_log("browser")
                          if e["level"] in ("SEVERE", "WARNING")]
    finally:
        driver.quit()
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
