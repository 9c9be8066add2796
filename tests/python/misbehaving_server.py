"""An HTTP server that misbehaves on purpose, for the remote-reading tests.

Serves the files of a document root (argv[2]) on 127.0.0.1:PORT (argv[1]).
The first path component picks the behaviour; the rest names the file:

  /ok/NAME            correct single-range answers (206, Content-Range, ETag,
                      If-Match -> 412 when it differs)
  /wrong-suffix/NAME  a suffix range (bytes=-N) is answered with the FIRST N
                      bytes, labelled "bytes 0-(N-1)/SIZE"; other ranges are
                      answered correctly
  /shifted/NAME       every range is answered one byte later than asked, and
                      labelled so
  /short/NAME         honest Content-Range, but only half the body (with a
                      Content-Length that says so)
  /drop-once/NAME     the first request for each range end sends the headers
                      and half the body, then closes the connection; later
                      ones (the resumption of the rest) are correct
  /drop-always/NAME   every ranged answer is cut off halfway
  /drop-noetag/NAME   like drop-always, without an ETag (nothing to resume by)
  /flaky/NAME         the first two requests for each range get 503, the
                      third a correct answer
  /huge-total/NAME    every Content-Range claims a total of 64 GiB: a suffix
                      range is answered with the file's last bytes labelled
                      as the end of 64 GiB; other ranges with the file's
                      bytes where it has them (416 past them)

Each request is logged to stdout as one line: method, path, Range, status.
"""

import hashlib
import http.server
import os
import sys
import threading

ROOT = sys.argv[2] if len(sys.argv) > 2 else "."
COUNTS = {}
LOCK = threading.Lock()


def seen(key):
    """How many times this key was requested before (and counts this one)."""
    with LOCK:
        n = COUNTS.get(key, 0)
        COUNTS[key] = n + 1
        return n


def parse_range(header, size):
    """(start, end_inclusive, is_suffix) or None when absent or unusable."""
    if not header or not header.startswith("bytes=") or "," in header:
        return None
    first, _, last = header[len("bytes="):].partition("-")
    if first == "":
        n = int(last)
        return (max(size - n, 0), size - 1, True)
    start = int(first)
    end = int(last) if last else size - 1
    return (start, min(end, size - 1), False)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # one line per request, on stdout
        pass

    def do_HEAD(self):
        self.answer(head=True)

    def do_GET(self):
        self.answer(head=False)

    def note(self, status):
        print(self.command, self.path, self.headers.get("Range"), status, flush=True)

    def plain(self, status, body=b""):
        self.note(status)
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def answer(self, head):
        parts = self.path.lstrip("/").split("/", 1)
        if len(parts) != 2:
            return self.plain(404)
        mode, name = parts
        path = os.path.join(ROOT, name)
        if ".." in name.split("/") or not os.path.isfile(path):
            return self.plain(404)
        with open(path, "rb") as f:
            data = f.read()
        size = len(data)
        etag = '"%s"' % hashlib.sha1(data).hexdigest()[:16]
        send_etag = mode != "drop-noetag"
        wanted = self.headers.get("If-Match")
        if send_etag and wanted is not None and wanted != etag:
            return self.plain(412)
        rng = parse_range(self.headers.get("Range"), size)
        key = (mode, name, self.headers.get("Range"))
        if mode == "flaky" and seen(key) < 2:
            return self.plain(503, b"try again")
        if head or rng is None:
            self.note(200)
            self.send_response(200)
            self.send_header("Content-Length", str(size))
            self.send_header("Accept-Ranges", "bytes")
            if send_etag:
                self.send_header("ETag", etag)
            self.end_headers()
            if not head:
                self.wfile.write(data)
            return
        if mode == "huge-total":
            return self.huge_total(data)
        start, end, suffix = rng
        if start >= size:
            self.note(416)
            self.send_response(416)
            self.send_header("Content-Range", "bytes */%d" % size)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if mode == "wrong-suffix" and suffix:
            start, end = 0, end - start
        if mode == "shifted" and end + 1 < size:
            start, end = start + 1, end + 1
        body = data[start:end + 1]
        length = len(body)
        drop = mode in ("drop-always", "drop-noetag") or (
            mode == "drop-once" and seen((mode, name, "end", end)) == 0
        )
        if mode == "short":
            body = body[: len(body) // 2]
            length = len(body)
        self.note(206)
        self.send_response(206)
        self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, size))
        self.send_header("Content-Length", str(length))
        self.send_header("Accept-Ranges", "bytes")
        if send_etag:
            self.send_header("ETag", etag)
        self.end_headers()
        if drop:
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            try:
                self.connection.shutdown(2)
            except OSError:
                pass
            return
        self.wfile.write(body)

    def huge_total(self, data):
        claimed = 64 << 30
        rng = parse_range(self.headers.get("Range"), claimed)
        start, end, suffix = rng
        if suffix:
            n = end - start + 1
            body = data[-n:] if n <= len(data) else data
            start = claimed - len(body)
            end = claimed - 1
        elif start >= len(data):
            self.note(416)
            self.send_response(416)
            self.send_header("Content-Range", "bytes */%d" % claimed)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        else:
            body = data[start:end + 1]
        self.note(206)
        self.send_response(206)
        self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, claimed))
        self.send_header("Content-Length", str(len(body)))
        self.send_header("ETag", '"%s"' % hashlib.sha1(data).hexdigest()[:16])
        self.end_headers()
        self.wfile.write(body)


def main():
    port = int(sys.argv[1])
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
