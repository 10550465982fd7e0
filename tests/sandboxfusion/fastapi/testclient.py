"""Stand-in for FastAPI's TestClient: the same request, sent over HTTP to a
real `sandcell serve` at $SANDCELL_URL with $SANDCELL_TOKEN. With
$SANDCELL_SUITE_VERBOSE set, each answer is printed too (pytest shows it
for a failed test)."""
import json
import os
import urllib.error
import urllib.request


class Response:
    def __init__(self, status_code, body):
        self.status_code = status_code
        self.content = body
        self.text = body.decode('utf-8', 'replace')

    def json(self):
        return json.loads(self.text)


class TestClient:
    __test__ = False  # not a pytest class

    def __init__(self, app=None):
        self.url = os.environ['SANDCELL_URL'].rstrip('/')
        self.token = os.environ.get('SANDCELL_TOKEN', '')

    def post(self, path, json=None):
        data = __import__('json').dumps(json).encode()
        req = urllib.request.Request(self.url + path, data, {
            'Content-Type': 'application/json',
            'Authorization': 'Bearer ' + self.token,
        })
        try:
            with urllib.request.urlopen(req, timeout=900) as r:
                resp = Response(r.status, r.read())
        except urllib.error.HTTPError as e:
            resp = Response(e.code, e.read())
        if os.environ.get('SANDCELL_SUITE_VERBOSE'):
            print('sandcell answered %d: %s' % (resp.status_code, resp.text[:4000]))
        return resp
