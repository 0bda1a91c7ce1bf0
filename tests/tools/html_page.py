#!/usr/bin/env python3
"""Opens HTML pages in headless Chromium, driven through the DevTools protocol by Debian's
chromium-driver and python3-selenium, and says what the page itself shows, as JSON on stdout:

  html_page.py PAGE.html [--screenshot OUT.png] [--timeout S]

  {"ready": true, "ready_ms": 640, "console": ["SEVERE ..."], "requests": ["https://..."],
   "broken_links": ["chart-x"],
   "charts": [{"id": "wait", "kind": "line", "series": 3, "points": 33, "rows": null,
               "absent": null, "drawn": 33, "values": [...]}],
   "screenshot": {"width": 1200, "height": 900, "colours": 812, "ink_pct": 9.5}, "text": "..."}

`drawn` counts the marks' data in the Vega view (view.data('points')), so a chart whose data
never reached its view is seen. `requests` lists every request the page made other than the
file itself (from Chromium's performance log). Run it inside `unshare -n` to cut the network: it
brings the namespace's loopback up (chromedriver listens on it) and nothing else.

Selenium rather than puppeteer-core: both are driven through the same protocol, but selenium and
the driver come from Debian (matched to Debian's chromium by the package), so no npm download is
needed on a test machine.
"""
import argparse
import fcntl
import json
import os
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
r.ready.then(() => {
  const broken = [...document.querySelectorAll('a[href^="#"]')].map((a) => a.getAttribute('href').slice(1))
    .filter((id) => !document.getElementById(id));
  done({ready: true, ready_ms: performance.now(), text: document.body.innerText, broken_links: broken,
        charts: r.charts.map((c) => ({id: c.id, kind: c.kind || null, series: c.series, points: c.points,
          rows: c.rows === undefined ? null : c.rows, absent: c.absent || null,
          drawn: c.view ? c.view.data('points').length : null, values: c.values, counts: c.counts || null}))});
}, (e) => done({ready: false, error: String(e)}));
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("page")
    ap.add_argument("--screenshot")
    ap.add_argument("--timeout", type=float, default=30)
    a = ap.parse_args()
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
        url = "file://" + os.path.abspath(a.page)
        driver.get(url)
        out = driver.execute_async_script(INVENTORY)
        out["console"] = [f"{e['level']} {e['message']}" for e in driver.get_log("browser")
                          if e["level"] in ("SEVERE", "WARNING")]
        requests = []
        for e in driver.get_log("performance"):
            m = json.loads(e["message"])["message"]
            if m.get("method") == "Network.requestWillBeSent":
                u = m["params"]["request"]["url"]
                # Chromium's own pages (the new tab it opens with) are not the report's.
                if u != url and not u.startswith(("data:", "chrome:", "chrome-untrusted:", "devtools:")):
                    requests.append(u)
        out["requests"] = requests
        if a.screenshot:
            # The whole page: the window made as tall as the document.
            height = driver.execute_script("return document.documentElement.scrollHeight")
            driver.set_window_size(1200, min(int(height) + 50, 16000))
            time.sleep(0.2)
            png = driver.get_screenshot_as_png()
            with open(a.screenshot, "wb") as f:
                f.write(png)
            out["screenshot"] = screenshot_stats(png)
    finally:
        driver.quit()
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
