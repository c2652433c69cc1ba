"""A hostile command's HTTP client, run inside the sandbox by the secret-leak tests.

It reads a JSON plan (argv[1]): a list of requests, each sent through the sandbox's proxy exactly
as written (raw path, raw headers, a body whole or in pieces), over HTTPS (CONNECT, trusting
SSL_CERT_FILE) or plain HTTP (an absolute URL to the proxy). Everything that comes back (status
line, headers, body as received: never decompressed) is written to OUT/<name>.resp and printed,
so the test can look for the secret's value in what the sandbox and the model were handed.
"""

import base64
import http.client
import json
import os
import ssl
import sys
import time
from urllib.parse import urlsplit


def proxy(scheme):
    url = os.environ["HTTPS_PROXY" if scheme == "https" else "HTTP_PROXY"]
    parts = urlsplit(url)
    return parts.hostname, parts.port


def connection(request):
    host, port = proxy(request["scheme"])
    if request["scheme"] == "https":
        context = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
        conn = http.client.HTTPSConnection(host, port, timeout=30, context=context)
        conn.set_tunnel(request["host"], request["port"])
        return conn, request["path"]
    conn = http.client.HTTPConnection(host, port, timeout=30)
    return conn, "http://%s:%d%s" % (request["host"], request["port"], request["path"])


def send(request):
    conn, target = connection(request)
    conn.putrequest(request.get("method", "GET"), target, skip_accept_encoding=True)
    pieces = [base64.b64decode(p) for p in request.get("pieces", [])]
    for name, value in request.get("headers", []):
        conn.putheader(name, value)
    if pieces:
        conn.putheader("Transfer-Encoding", "chunked")
    conn.endheaders()
    for piece in pieces:
        conn.send(b"%x\r\n%s\r\n" % (len(piece), piece))
        time.sleep(0.01)
    if pieces:
        conn.send(b"0\r\n\r\n")
    response = conn.getresponse()
    head = "%d %s\n" % (response.status, response.reason)
    head += "".join("%s: %s\n" % (k, v) for k, v in response.getheaders())
    return head.encode("latin1") + b"\n" + response.read()


def main():
    plan = json.load(open(sys.argv[1]))
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)
    for request in plan:
        try:
            received = send(request)
        except Exception as error:  # a cut-off exchange is an outcome too
            received = ("ERROR %s %s" % (type(error).__name__, error)).encode()
        with open(os.path.join(out, request["name"] + ".resp"), "wb") as f:
            f.write(received)
        sys.stdout.write("== %s\n%s\n" % (request["name"], received.decode("latin1")))
    sys.stdout.flush()


main()
