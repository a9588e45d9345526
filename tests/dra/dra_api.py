"""A client of tests/kube/apiserver.py's resource.k8s.io/v1 API (test code), shared by tests/dra/kubelet_dra.py
and tests/dra/standins_test.py: HTTPS with the stand-in's CA and token, read from the files it writes in its
--dir (port, ca.crt, serviceaccount/token), as a kubelet reads its kubeconfig's.

    api = Api(folder)
    code, body = api.call("GET", RESOURCE + "/resourceslices", query={"fieldSelector": "spec.nodeName=n1"})
    body = api.expect(200, "GET", path)   # ApiError unless the answer is 200: "GET <path>: <code> <message>"
"""
import http.client
import json
import os
import ssl
import urllib.parse

RESOURCE = "/apis/resource.k8s.io/v1"
DRIVER = "gpu.nvidia.com"
TIMEOUT = 30


class ApiError(Exception):
    pass


def read(folder, name):
    try:
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            return f.read().strip()
    except OSError as e:
        raise ApiError(f"{os.path.join(folder, name)}: {e.strerror} (not an apiserver.py --dir?)") from None


class Api:
    def __init__(self, folder):
        self.port = int(read(folder, "port"))
        self.token = read(folder, os.path.join("serviceaccount", "token"))
        self.context = ssl.create_default_context(cafile=os.path.join(folder, "ca.crt"))

    def call(self, method, path, body=None, query=None, content_type="application/json"):
        """(status code, the answer's JSON)."""
        url = path + ("?" + urllib.parse.urlencode(query) if query else "")
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = content_type
        connection = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.context, timeout=TIMEOUT)
        try:
            connection.request(method, url, body=data, headers=headers)
            answer = connection.getresponse()
            text = answer.read()
        except OSError as e:
            raise ApiError(f"{method} {path}: {e}") from None
        finally:
            connection.close()
        try:
            return answer.status, json.loads(text)
        except ValueError:
            raise ApiError(f"{method} {path}: {answer.status}, not JSON: {text[:200]!r}") from None

    def expect(self, code, method, path, body=None, query=None, content_type="application/json"):
        got, answer = self.call(method, path, body, query, content_type)
        if got != code:
            raise ApiError(f"{method} {path}: {got} {answer.get('message', answer)}")
        return answer


def claim_path(namespace, name):
    return f"{RESOURCE}/namespaces/{namespace}/resourceclaims/{name}"
