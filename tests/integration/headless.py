"""Opens a page in headless Chromium (Debian's `chromium`) and talks to it
over the DevTools protocol on a pipe (--remote-debugging-pipe: fd 3 in,
fd 4 out, messages end with NUL), with the Python standard library only.
Collects console errors, uncaught exceptions, dialogs (alert/confirm/prompt)
and any request that is not file: or data:, evaluates JavaScript, and takes
screenshots; decodes PNG to count pixels (zlib + PNG filters)."""
import base64
import json
import os
import select
import shutil
import struct
import subprocess
import tempfile
import time
import zlib


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


class Browser:
    """One headless browser with one page. Use as a context manager."""

    def __init__(self, width=1400, height=1000):
        self.exe = find_chromium()
        self.width, self.height = width, height
        self.events = []
        self.next_id = 0
        self.buf = b""

    def __enter__(self):
        self.profile = tempfile.mkdtemp(prefix="rs-chromium-")
        to_child_r, self.to_child = os.pipe()
        self.from_child, from_child_w = os.pipe()

        def fds():
            # Through fresh numbers first: a pipe end may already be 3 or 4,
            # and dup2 onto itself would keep its close-on-exec flag.
            a, b = os.dup(to_child_r), os.dup(from_child_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        args = [self.exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--no-default-browser-check", "--disable-extensions", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--mute-audio", "--hide-scrollbars",
                # No name resolves: a page that reaches out can only fail.
                "--host-resolver-rules=MAP * ~NOTFOUND",
                "--user-data-dir=" + self.profile, "--remote-debugging-pipe",
                "--window-size=%d,%d" % (self.width, self.height), "about:blank"]
        self.proc = subprocess.Popen(args, preexec_fn=fds, close_fds=False,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        os.close(to_child_r)
        os.close(from_child_w)
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": target, "flatten": True})["sessionId"]
        for m in ("Runtime.enable", "Log.enable", "Page.enable", "Network.enable"):
            self.call(m, session=True)
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": self.width, "height": self.height, "deviceScaleFactor": 1,
                   "mobile": False}, session=True)
        return self

    def __exit__(self, *exc):
        try:
            self.call("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.to_child)
        os.close(self.from_child)
        shutil.rmtree(self.profile, ignore_errors=True)

    def _read(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.time()
            if left <= 0:
                raise TimeoutError("no answer from chromium")
            r, _, _ = select.select([self.from_child], [], [], left)
            if r:
                chunk = os.read(self.from_child, 1 << 20)
                if not chunk:
                    err = self.proc.stderr.read().decode(errors="replace")[-2000:]
                    raise RuntimeError("chromium closed the pipe: " + err)
                self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def _on_event(self, m):
        self.events.append(m)
        if m.get("method") == "Page.javascriptDialogOpening":
            # Dismiss it, or the page stays blocked; the test sees the event.
            self.send("Page.handleJavaScriptDialog", {"accept": False}, session=True)

    def send(self, method, params=None, session=False):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        os.write(self.to_child, json.dumps(msg).encode() + b"\0")
        return self.next_id

    def call(self, method, params=None, session=False, timeout=30):
        want = self.send(method, params, session)
        deadline = time.time() + timeout
        while True:
            m = self._read(deadline)
            if m.get("id") == want:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            if "method" in m:
                self._on_event(m)

    def wait_event(self, method, timeout=30):
        for m in self.events:
            if m.get("method") == method:
                return m
        deadline = time.time() + timeout
        while True:
            m = self._read(deadline)
            if "method" in m:
                self._on_event(m)
                if m["method"] == method:
                    return m

    def settle(self, seconds):
        """Reads events for a while (timers, late errors)."""
        deadline = time.time() + seconds
        while True:
            try:
                m = self._read(deadline)
            except TimeoutError:
                return
            if "method" in m:
                self._on_event(m)

    def open(self, path):
        self.call("Page.navigate", {"url": "file://" + os.path.abspath(path)}, session=True)
        self.wait_event("Page.loadEventFired", timeout=60)
        self.settle(1.0)

    def eval(self, expr):
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True,
                                           "awaitPromise": True}, session=True)
        if "exceptionDetails" in r:
            raise RuntimeError("evaluate %r: %s" % (expr, r["exceptionDetails"]))
        return r["result"].get("value")

    def screenshot(self, path, full_page=False):
        # Fast encoding: every row "Up"-filtered, which png_pixels undoes quickly.
        params = {"format": "png", "optimizeForSpeed": True}
        if full_page:
            params["captureBeyondViewport"] = True
            h = self.eval("document.documentElement.scrollHeight")
            params["clip"] = {"x": 0, "y": 0, "width": self.width, "height": h, "scale": 1}
        data = self.call("Page.captureScreenshot", params, session=True, timeout=60)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def problems(self):
        """Console errors, exceptions, dialogs and outside requests seen."""
        out = []
        for m in self.events:
            meth, p = m.get("method"), m.get("params", {})
            if meth == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append("exception: %s %s" % (d.get("text"),
                                                 d.get("exception", {}).get("description", "")))
            elif meth == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append("console.%s: %s" % (p["type"], [a.get("value", a.get("description"))
                                                          for a in p.get("args", [])]))
            elif meth == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                e = p["entry"]
                out.append("log error (%s): %s %s" % (e.get("source"), e.get("text"),
                                                      e.get("url", "")))
            elif meth == "Page.javascriptDialogOpening":
                out.append("dialog %s: %s" % (p.get("type"), p.get("message")))
            elif meth == "Network.requestWillBeSent":
                url = p.get("request", {}).get("url", "")
                if not url.startswith(("file:", "data:", "about:")):
                    out.append("request to " + url)
        return out


def _add_bytes(x, y):
    """(x[i] + y[i]) & 255 for equal-length byte strings, at C speed: each
    byte in a 16-bit lane of a big integer, so sums cannot carry over."""
    n = len(x)
    a, b = bytearray(2 * n), bytearray(2 * n)
    a[1::2], b[1::2] = x, y
    s = int.from_bytes(a, "big") + int.from_bytes(b, "big")
    return bytearray(s.to_bytes(2 * n, "big")[1::2])


class Image:
    """A decoded 8-bit RGB or RGBA PNG: width, height, rows of raw bytes."""

    def __init__(self, w, h, bpp, rows):
        self.width, self.height, self.bpp, self.rows = w, h, bpp, rows

    def pixel(self, x, y):
        o = x * self.bpp
        return tuple(self.rows[y][o:o + 3])


def png_pixels(path):
    """Decodes an 8-bit RGB or RGBA PNG (what Chromium writes) into an Image."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, hdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype = hdr[0], hdr[1], hdr[2], hdr[3]
    if depth != 8 or ctype not in (2, 6) or hdr[6] != 0:
        raise ValueError("PNG kind not handled: depth %d colour type %d" % (depth, ctype))
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev, pos = [], bytearray(stride), 0
    for _ in range(h):
        ft, line = raw[pos], bytearray(raw[pos + 1:pos + 1 + stride])
        pos += 1 + stride
        if ft == 2:
            line = _add_bytes(line, prev)
        elif ft != 0:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                if ft == 1:
                    line[i] = (line[i] + a) & 255
                elif ft == 3:
                    line[i] = (line[i] + (a + b) // 2) & 255
                elif ft == 4:
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                    line[i] = (line[i] + pred) & 255
        rows.append(bytes(line))
        prev = line
    return Image(w, h, bpp, rows)
