"""What a hostile task runs in its own sandbox to plant packages in npm's and pip's caches
(test/e2e/package-cache-isolation.test.ts), with nothing but the sandbox's own loopback.

serve ROUTES.json: answers, on the registries' own addresses and ports (127.0.0.2 is the sandbox's
    own loopback too), what ROUTES.json lists: {"servers": [{"host", "port", "routes": {PATH:
    {"file", "type", "headers"}}}]}, files relative to ROUTES.json. So npm and pip, pointed at the
    very URLs a later task uses, store the planted answers in their caches under that task's keys.
    Writes READY beside ROUTES.json once every server listens.
plant-wheel CACHE_DIR URL SHA256 WHEEL: puts WHEEL where pip's wheel cache looks for the wheel it
    built from the sdist at URL with that hash, so that a later `pip install` of the sdist takes it
    instead of building the sdist it downloaded.
"""

import http.server
import json
import os
import shutil
import sys
import threading


def serve(routes_path):
    base = os.path.dirname(os.path.abspath(routes_path))
    with open(routes_path) as f:
        config = json.load(f)

    def handler_for(routes):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                route = routes.get(self.path.split("?")[0])
                if route is None:
                    self.send_response(404)
                    self.end_headers()
                    return
                with open(os.path.join(base, route["file"]), "rb") as f:
                    body = f.read()
                self.send_response(200)
                self.send_header("content-type", route["type"])
                self.send_header("content-length", str(len(body)))
                for name, value in route.get("headers", {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        return Handler

    servers = [
        http.server.ThreadingHTTPServer((s["host"], s["port"]), handler_for(s["routes"]))
        for s in config["servers"]
    ]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    open(os.path.join(base, "READY"), "w").close()
    threading.Event().wait()


def plant_wheel(cache_dir, url, sha256, wheel):
    from pip._internal.cache import SimpleWheelCache
    from pip._internal.models.link import Link

    try:
        cache = SimpleWheelCache(cache_dir)
    except TypeError:
        from pip._internal.models.format_control import FormatControl

        cache = SimpleWheelCache(cache_dir, FormatControl())
    where = cache.get_path_for_link(Link(f"{url}#sha256={sha256}"))
    os.makedirs(where, exist_ok=True)
    shutil.copy(wheel, os.path.join(where, os.path.basename(wheel)))
    print(where)


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
    elif sys.argv[1] == "plant-wheel":
        plant_wheel(*sys.argv[2:6])
    else:
        sys.exit(f"unknown command {sys.argv[1]}")
