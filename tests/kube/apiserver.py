#!/usr/bin/env python3
"""A strict stand-in for the Kubernetes API server, for gpuctk's tests: python3's standard library and the
openssl command line only. No real API server is run by any test; this one answers with the real one's
JSON shapes (Status, NodeList, watch events) and refuses what the real one refuses, and more (strict):

  apiserver.py --dir DIR [--token TOKEN] [--node NAME[:KEY=VALUE,...]]... [--resource-types TYPES.GO]

At its start it makes, in DIR:
  ca.crt                  the CA of the server's certificate (127.0.0.1, localhost) and of client.crt
  other-ca.crt            a CA that signed nothing here (a client that trusts it must fail)
  client.crt client.key   a client certificate the server accepts (user "gpuctk-test-user")
  serviceaccount/         token, ca.crt, namespace: the in-cluster layout (the token is TOKEN, default
                          "gpuctk-test-token-1", accepted without expiry)
  kubeconfig              current-context "test": server, certificate-authority ca.crt, tokenFile
                          serviceaccount/token
  port, control-port      the API's HTTPS port and the control port (plain HTTP), both on 127.0.0.1
  ready                   written last (atomically): both ports listen
and prints "apiserver: port P control-port C" on stdout. SIGTERM or SIGINT ends it.

The API (HTTPS, Authorization: Bearer TOKEN or the client certificate; 401 Status otherwise):
  GET    /api/v1/nodes[?fieldSelector=metadata.name%3DX&labelSelector=k%3Dv&resourceVersion=N]  NodeList
  GET    /api/v1/nodes?watch=1&resourceVersion=N&allowWatchBookmarks=true&fieldSelector=...
         &timeoutSeconds=S   ADDED/MODIFIED/DELETED/BOOKMARK events, one JSON per line, chunked; a version
         older than the compacted one: one ERROR event with a 410 Expired Status, then the end
  GET    /api/v1/nodes/X     the Node, or 404 Status
  POST   /api/v1/nodes       create (409 AlreadyExists)
  PUT    /api/v1/nodes/X     replace; 409 Conflict for a stale metadata.resourceVersion
  PATCH  /api/v1/nodes/X     application/merge-patch+json or strategic-merge-patch+json (as a merge
                             patch); 409 for a stale metadata.resourceVersion in the patch
  DELETE /api/v1/nodes/X     the deleted Node
  Unknown query parameters, unknown fields in bodies and unsupported selectors: 400 BadRequest Status.
  POST creates with metadata.generateName (and no name) get the name plus 5 random characters.

With --resource-types TYPES.GO (k8s.io/api/resource/v1/types.go of Debian's golang-k8s-api-dev, linked by
scripts/deps.sh as /var/cache/gpuctk-tests/k8s-api-resource-v1-types.go), resource.k8s.io/v1 is served too
(without it those paths are 404, as on a cluster without DRA):
  /apis/resource.k8s.io/v1/resourceslices[/X]               ResourceSlice, cluster-scoped
  /apis/resource.k8s.io/v1/namespaces/NS/resourceclaims[/X]  ResourceClaim, namespaced
  /apis/resource.k8s.io/v1/namespaces/NS/resourceclaims/X/status   the status subresource (GET, PUT, PATCH)
  /apis/resource.k8s.io/v1/deviceclasses[/X]                DeviceClass, cluster-scoped
  with the verbs above (list, watch, get, create, replace, patch, delete) and deletecollection: DELETE on the
  collection with fieldSelector/labelSelector deletes the matches and answers them as a list (the kubelet
  wipes its node's slices so). Bodies are decoded strictly against the schemas read from TYPES.GO's structs
  (tests/kube/dra_kinds.py): an unknown field or a JSON type the Go field cannot take is 400 (the decoder's
  words, e.g. "json: cannot unmarshal string into Go struct field spec.pool.generation of type int64").
  Field selectors: metadata.name, metadata.namespace and, for resourceslices, spec.nodeName, spec.driver and
  spec.pool.name ("," between requirements, = or ==; an unset nodeName is ""). A claim's PUT/PATCH keep its
  stored status and its create starts unallocated (status {}); PUT/PATCH of .../status change only the status.
  metadata.generation is 1 at create and grows when the spec changes.
  Validation, as k8s.io/kubernetes' pkg/apis/resource/validation by the rules TYPES.GO's comments state,
  with the limits its constants give by name (a constant missing there: exit 1 at start, one line):
    ResourceSlice: metadata.name a DNS subdomain; spec.driver a DNS subdomain <= DriverNameMaxLength;
      spec.pool.name required, <= PoolNameMaxLength, DNS subdomains separated by "/"; pool.generation >= 0;
      pool.resourceSliceCount > 0; exactly one of nodeName (a DNS subdomain), nodeSelector (exactly one
      term; operators of core v1, matchFields on metadata.name), allNodes: true, perDeviceNodeSelection: true;
      devices and sharedCounters not both; devices <= ResourceSliceMaxDevices, or
      ResourceSliceMaxDevicesWithAdvancedFeatures when a device has taints or consumesCounters; device names
      unique DNS labels; per device attributes + capacity <= ResourceSliceMaxAttributesAndCapacitiesPerDevice;
      their names a C identifier <= DeviceMaxIDLength with an optional "<DNS subdomain <= DeviceMaxDomainLength>/"
      prefix; an attribute exactly one of int, bool, string, version (the list forms need the alpha
      DRAListTypeAttributes gate: Forbidden), string and version <= DeviceAttributeMaxValueLength, version a
      semver 2.0.0 string; capacity[].value a Kubernetes quantity; device nodeName/nodeSelector/allNodes
      only with perDeviceNodeSelection (then exactly one); taints <= DeviceTaintsMaxLength, key a label key,
      value a label value, effect None, NoSchedule or NoExecute. On update driver, pool.name, nodeName are
      immutable.
    ResourceClaim: requests <= DeviceRequestsMaxSize, names unique DNS labels, exactly one of exactly and
      firstAvailable, deviceClassName a DNS subdomain, allocationMode ExactCount (count > 0) or All,
      selectors <= DeviceSelectorsMaxSize with a cel.expression <= CELSelectorExpressionMaxLength,
      tolerations <= DeviceTolerationsMaxLength; constraints' and config's requests name requests; the spec
      is immutable. Status: allocation.devices.results <= AllocationResultsMaxSize, each with request (a
      request of the spec, or request/subrequest), driver, pool (a pool name), device (a DNS label);
      allocation.nodeSelector as above; allocation immutable once set (clearing it is allowed);
      reservedFor <= ResourceClaimReservedForMaxSize, unique uids, only with an allocation.
    DeviceClass: selectors as a request's; config[].opaque.driver a DNS subdomain.
  A failure is 422 Invalid Status as the real server's: message '<Kind>.resource.k8s.io "<name>" is
  invalid: <path>: <error>' ("[e1, e2]" for several) and details {name, group, kind, causes: [{reason,
  message, field}]}, e.g. 'ResourceSlice.resource.k8s.io "s" is invalid: spec.devices[0].name: Invalid
  value: "GPU-0": a lowercase RFC 1123 label must consist of ...'.

The control port (plain HTTP on 127.0.0.1, no authentication; JSON in, JSON out), for tests only:
  POST /nodes          {"name": "n1", "labels": {"k": "v"}}    create a node     -> the node
  POST /label          {"node": "n1", "key": "k", "value": "v"} set a label (value null: remove it)
  POST /delete         {"node": "n1"}                          delete a node
  POST /compact        {}   history up to now is gone: watches from older versions get 410 -> {"compacted": rv}
  POST /close-watches  {}   every open watch stream ends (cleanly)                  -> {"closed": n}
  POST /bookmark       {}   a BOOKMARK at the current version to each watch that allows them, answered
                            once every open stream has written it  -> {"resourceVersion": rv, "sent": n}
  POST /stall          {"seconds": s}  API requests get no answer for s seconds from now (0: answer again)
  POST /token          {"token": "t"} accepted from now (with "expires_in": seconds: until then);
                       {"token": "t", "expire": true} expired now; {"token": "t", "remove": true} unknown
  GET  /requests       {"requests": [{"method", "path", "query": {name: value}, "user", "code"}]} every API
                       request so far (user "" when unauthenticated), in order
  GET  /watches        {"open": n}: watch streams open now
  GET  /state          {"resourceVersion": rv, "compacted": rv}
More kinds are added as rows of COLLECTIONS (add_dra_kinds adds resource.k8s.io's).
"""

import argparse
import copy
import json
import os
import random
import select
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_BODY = 4 * 1024 * 1024
DEFAULT_WATCH_SECONDS = 1800
USER_CERT_NAME = "gpuctk-test-user"
NAME_SUFFIX = "bcdfghjklmnpqrstvwxz2456789"  # generateName's alphabet (k8s.io/apiserver's)

# Field names of ObjectMeta the server accepts in bodies (k8s.io/apimachinery's ObjectMeta).
METADATA_FIELDS = {
    "name", "generateName", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
    "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences",
    "finalizers", "managedFields", "selfLink",
}
# A schema is a dict of field -> sub-schema; None: any value (not checked further).
NODE_SCHEMA = {
    "kind": None,
    "apiVersion": None,
    "metadata": {name: None for name in METADATA_FIELDS},
    # NodeSpec's fields (k8s.io/api/core/v1).
    "spec": {"podCIDR": None, "podCIDRs": None, "providerID": None, "unschedulable": None, "taints": None,
             "configSource": None, "externalID": None},
    "status": None,
}


class Kind:
    """One collection's kind: its names, scope and the fields its bodies may hold. The resource.k8s.io kinds
    (add_dra_kinds) add: `decode` (the body's first unknown or mistyped field, or None), `validate` (obj,
    old or None -> [FieldError]: 422), `status_subresource` (PUT/PATCH .../NAME/status change only the
    status; the main resource's PUT/PATCH keep the stored status) and `fields` (field selector labels
    beyond metadata.name and metadata.namespace)."""

    def __init__(self, kind, list_kind, api_version, namespaced, schema, decode=None, validate=None,
                 status_subresource=False, fields=(), reset_status_on_create=False):
        self.kind = kind
        self.list_kind = list_kind
        self.api_version = api_version
        self.namespaced = namespaced
        self.schema = schema
        self.decode = decode or (lambda obj: unknown_fields(obj, schema))
        self.validate = validate
        self.status_subresource = status_subresource
        self.fields = ("metadata.name", "metadata.namespace", *fields)
        self.reset_status_on_create = reset_status_on_create


# (group, version, plural) -> Kind. group "" is the core API (/api/v1).
COLLECTIONS = {
    ("", "v1", "nodes"): Kind("Node", "NodeList", "v1", False, NODE_SCHEMA),
}


RESOURCE = ("resource.k8s.io", "v1")


def add_dra_kinds(types_path):
    """The rows of resource.k8s.io/v1's resourceslices, resourceclaims and deviceclasses, their schemas and
    limits read from `types_path` (k8s.io/api/resource/v1/types.go; tests/kube/dra_kinds.py). ValueError:
    the file lacks what they need."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import dra_kinds
    schemas, limits = dra_kinds.load_types(types_path)

    def row(kind, namespaced, check, **more):
        schema = schemas[kind]
        return Kind(kind, kind + "List", "resource.k8s.io/v1", namespaced, schema,
                    decode=lambda obj: dra_kinds.decode_error(obj, schema),
                    validate=lambda obj, old: check(obj, limits, old), **more)

    rows = {
        (*RESOURCE, "resourceslices"): row("ResourceSlice", False, dra_kinds.validate_slice,
                                           fields=("spec.nodeName", "spec.driver", "spec.pool.name")),
        (*RESOURCE, "resourceclaims"): row("ResourceClaim", True, dra_kinds.validate_claim,
                                           status_subresource=True, reset_status_on_create=True),
        (*RESOURCE, "deviceclasses"): row("DeviceClass", False, dra_kinds.validate_class),
    }
    COLLECTIONS.update(rows)
    for key in rows:
        STORE.objects[key] = {}


def status(code, reason, message, details=None):
    """A Status object as the API server writes it for a failure."""
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}
    if details is not None:
        body["details"] = details
    return body


class ApiFailure(Exception):
    def __init__(self, code, reason, message, details=None):
        super().__init__(message)
        self.body = status(code, reason, message, details)
        self.code = code


def bad_request(message):
    return ApiFailure(400, "BadRequest", message)


def unknown_fields(value, schema, prefix=""):
    """The first field of `value` that `schema` does not know, as "spec.foo", or None."""
    if schema is None or not isinstance(value, dict):
        return None
    for key in sorted(value):
        if key not in schema:
            return prefix + key
        found = unknown_fields(value[key], schema[key], prefix + key + ".")
        if found:
            return found
    return None


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def parse_field_selector(text, kind):
    """{"metadata.name": "x"} from "metadata.name=x" (== too); fields other than the kind's selectable ones
    are refused as the real server does."""
    selector = {}
    for term in filter(None, text.split(",")):
        if "!=" in term:
            raise bad_request(f"field selector \"{term}\": != is not supported by this server")
        field, sep, value = term.replace("==", "=").partition("=")
        if not sep:
            raise bad_request(f"invalid field selector: \"{term}\"")
        if field not in kind.fields:
            raise bad_request(f"field label not supported: {field}")
        selector[field] = value
    return selector


def parse_label_selector(text):
    """[(key, op, value)] for "k=v", "k==v", "k!=v", "k" and "!k"."""
    terms = []
    for term in filter(None, text.split(",")):
        if "!=" in term:
            key, _, value = term.partition("!=")
            terms.append((key, "!=", value))
        elif "=" in term:
            key, _, value = term.replace("==", "=").partition("=")
            terms.append((key, "=", value))
        elif term.startswith("!"):
            terms.append((term[1:], "absent", None))
        elif all(c.isalnum() or c in "-_./" for c in term):
            terms.append((term, "exists", None))
        else:
            raise bad_request(f"unable to parse requirement: \"{term}\" (this server takes =, ==, != and existence)")
    return terms


def field_value(obj, field):
    """The value a field selector compares: the dotted path's string, "" when unset (a nil nodeName)."""
    for part in field.split("."):
        obj = obj.get(part) if isinstance(obj, dict) else None
    return "" if obj is None else str(obj)


def matches(obj, fields, labels):
    if any(field_value(obj, field) != value for field, value in fields.items()):
        return False
    have = obj.get("metadata", {}).get("labels") or {}
    for key, op, value in labels:
        if op == "=" and have.get(key) != value:
            return False
        if op == "!=" and have.get(key) == value:
            return False
        if op == "exists" and key not in have:
            return False
        if op == "absent" and key in have:
            return False
    return True


class Store:
    """Every collection's objects, one resourceVersion counter (as etcd's) and the event history."""

    def __init__(self):
        self.cond = threading.Condition()
        self.rv = 100
        self.compacted = 0
        self.objects = {key: {} for key in COLLECTIONS}  # collection -> (namespace, name) -> object
        self.history = []  # (rv, collection, type, object)
        self.close_generation = 0
        self.bookmark_generation = 0
        self.bookmarks_written = 0
        self.watches = 0
        self.tokens = {}  # token -> expiry (time.time()) or None
        self.requests = []
        self.stall_until = 0.0

    def _record(self, collection, event_type, obj):
        """Under the lock: bumps the version, stamps `obj` with it and appends the event."""
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        self.history.append((self.rv, collection, event_type, copy.deepcopy(obj)))
        self.cond.notify_all()

    def create(self, collection, obj):
        kind = COLLECTIONS[collection]
        meta = obj.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + "".join(random.choice(NAME_SUFFIX) for _ in range(5))
        key = (meta.get("namespace", ""), meta.get("name", ""))
        with self.cond:
            if key in self.objects[collection]:
                plural = collection[2]
                raise ApiFailure(409, "AlreadyExists", f"{plural} \"{key[1]}\" already exists",
                                 {"name": key[1], "kind": plural})
            obj["kind"], obj["apiVersion"] = kind.kind, api_version(collection)
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            obj.setdefault("spec", {})
            if "status" in kind.schema:
                obj.setdefault("status", {})
            if kind.validate:  # the generated name is validated too; metadata.generation as the real one
                invalid(collection, meta["name"], kind.validate(obj, None))
                meta["generation"] = 1
            if kind.reset_status_on_create:  # a claim is created unallocated, whatever the body says
                obj["status"] = {}
            self.objects[collection][key] = obj
            self._record(collection, "ADDED", obj)
            return copy.deepcopy(obj)

    def get(self, collection, key):
        with self.cond:
            obj = self.objects[collection].get(key)
            if obj is None:
                raise not_found(collection, key)
            return copy.deepcopy(obj)

    def update(self, collection, key, change, expected_rv=None):
        """Applies `change` (a function of a copy of the object) and records MODIFIED when it changed."""
        with self.cond:
            current = self.objects[collection].get(key)
            if current is None:
                raise not_found(collection, key)
            if expected_rv not in (None, "") and expected_rv != current["metadata"]["resourceVersion"]:
                plural = collection[2]
                raise ApiFailure(409, "Conflict",
                                 f"Operation cannot be fulfilled on {plural} \"{key[1]}\": the object has been "
                                 "modified; please apply your changes to the latest version and try again",
                                 {"name": key[1], "kind": plural})
            updated = change(copy.deepcopy(current))
            for immutable in ("uid", "creationTimestamp", "name", "namespace", "generation"):
                if immutable in current["metadata"]:
                    updated["metadata"][immutable] = current["metadata"][immutable]
            updated["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            kind = COLLECTIONS[collection]
            if kind.validate:
                invalid(collection, key[1], kind.validate(updated, current))
                if updated.get("spec") != current.get("spec"):
                    updated["metadata"]["generation"] = current["metadata"].get("generation", 1) + 1
            if updated != current:
                self.objects[collection][key] = updated
                self._record(collection, "MODIFIED", updated)
            return copy.deepcopy(updated)

    def delete_matching(self, collection, namespace, fields, labels):
        """deletecollection: every object that the selectors match, deleted at once, as a list."""
        with self.cond:
            keys = [key for key, obj in sorted(self.objects[collection].items())
                    if (not namespace or key[0] == namespace) and matches(obj, fields, labels)]
            return [self.delete(collection, key) for key in keys]

    def delete(self, collection, key):
        with self.cond:
            obj = self.objects[collection].pop(key, None)
            if obj is None:
                raise not_found(collection, key)
            self._record(collection, "DELETED", obj)
            return copy.deepcopy(obj)

    def compact(self):
        with self.cond:
            self.compacted = self.rv
            self.history = [event for event in self.history if event[0] > self.compacted]
            return self.compacted


def api_version(collection):
    group, version, _ = collection
    return f"{group}/{version}" if group else version


def invalid(collection, name, errors):
    """The 422 Invalid Status of the real server for field errors (none: nothing)."""
    if not errors:
        return
    kind = COLLECTIONS[collection]
    group = collection[0]
    text = str(errors[0]) if len(errors) == 1 else "[" + ", ".join(map(str, errors)) + "]"
    causes = [{"reason": e.reason, "message": e.text, "field": e.path} for e in errors]
    raise ApiFailure(422, "Invalid", f"{kind.kind}.{group} \"{name}\" is invalid: {text}",
                     {"name": name, "group": group, "kind": kind.kind, "causes": causes})


def not_found(collection, key):
    plural = collection[2]
    return ApiFailure(404, "NotFound", f"{plural} \"{key[1]}\" not found", {"name": key[1], "kind": plural})


STORE = Store()


def parse_route(path):
    """(collection, namespace, name, subresource) of an API path, or None when the server has no such
    resource (name and subresource None for the collection)."""
    parts = [urllib.parse.unquote(p) for p in path.strip("/").split("/")]
    if parts[:2] == ["api", "v1"]:
        group, version, rest = "", "v1", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    if len(rest) not in (1, 2, 3):
        return None
    collection = (group, version, rest[0])
    kind = COLLECTIONS.get(collection)
    if kind is None or kind.namespaced != bool(namespace):
        return None
    subresource = rest[2] if len(rest) == 3 else None
    if subresource is not None and (subresource != "status" or not kind.status_subresource):
        return None
    return collection, namespace, rest[1] if len(rest) >= 2 else None, subresource


def single_query(raw):
    query = urllib.parse.parse_qs(raw, keep_blank_values=True)
    for name, values in query.items():
        if len(values) != 1:
            raise bad_request(f"query parameter \"{name}\" given {len(values)} times")
    return {name: values[0] for name, values in query.items()}


def writer(kind, subresource, change):
    """The update of a PUT or PATCH: through the status subresource only the status changes; through the
    main resource of a kind that has one, everything but the status (the real server's strategies)."""
    if subresource == "status":
        def status_only(current):
            return {**current, "status": change(copy.deepcopy(current)).get("status") or {}}
        return status_only
    if kind.status_subresource:
        def keep_status(current):
            return {**change(copy.deepcopy(current)), "status": current.get("status") or {}}
        return keep_status
    return change


def check_query(query, allowed):
    for name in sorted(query):
        if name not in allowed:
            raise bad_request(f"unknown query parameter \"{name}\"")


class ApiHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "gpuctk-test-apiserver"
    # A reply's headers and body are two writes: with Nagle's algorithm the body waits for the client's
    # delayed ACK of the headers (40 ms on Linux), which a real API server (Go, TCP_NODELAY) never costs.
    disable_nagle_algorithm = True

    def log_message(self, format, *args):  # noqa: A002 (http.server's name)
        pass

    def do_GET(self):
        self.serve("GET")

    def do_POST(self):
        self.serve("POST")

    def do_PUT(self):
        self.serve("PUT")

    def do_PATCH(self):
        self.serve("PATCH")

    def do_DELETE(self):
        self.serve("DELETE")

    def serve(self, method):
        url = urllib.parse.urlsplit(self.path)
        entry = {"method": method, "path": url.path, "query": {}, "user": "", "code": 0}
        with STORE.cond:
            STORE.requests.append(entry)
        while time.time() < STORE.stall_until:  # a server that accepted and says nothing
            time.sleep(0.05)
        try:
            body = self.read_body()
            entry["user"] = self.authenticate()
            entry["query"] = single_query(url.query)
            route = parse_route(url.path)
            if route is None:
                raise ApiFailure(404, "NotFound", "the server could not find the requested resource", {})
            self.dispatch(method, route, entry["query"], body, entry)
        except ApiFailure as failure:
            entry["code"] = failure.code
            self.send_json(failure.code, failure.body)

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self.close_connection = True
            raise ApiFailure(413, "RequestEntityTooLarge", "the request is too large")
        return self.rfile.read(length) if length else b""

    def authenticate(self):
        cert = self.connection.getpeercert()
        if cert:
            for rdn in cert.get("subject", ()):
                for name, value in rdn:
                    if name == "commonName":
                        return value
        header = self.headers.get("Authorization", "")
        if header.startswith("Bearer "):
            token = header[len("Bearer "):]
            with STORE.cond:
                if token in STORE.tokens:
                    expiry = STORE.tokens[token]
                    if expiry is None or time.time() < expiry:
                        return "token:" + token
        raise ApiFailure(401, "Unauthorized", "Unauthorized")

    def dispatch(self, method, route, query, body, entry):
        collection, namespace, name, subresource = route
        key = (namespace, name)
        kind = COLLECTIONS[collection]
        if name is None and method == "GET":
            if query.get("watch") in ("1", "true"):
                check_query(query, {"watch", "resourceVersion", "allowWatchBookmarks", "fieldSelector",
                                    "labelSelector", "timeoutSeconds"})
                entry["code"] = 200
                return self.watch(collection, namespace, query)
            check_query(query, {"resourceVersion", "fieldSelector", "labelSelector"})
            return self.reply(entry, 200, self.list(collection, namespace, query))
        if name is None and method == "DELETE":  # deletecollection
            check_query(query, {"fieldSelector", "labelSelector", "gracePeriodSeconds", "propagationPolicy"})
            deleted = STORE.delete_matching(collection, namespace, parse_field_selector(
                query.get("fieldSelector", ""), kind), parse_label_selector(query.get("labelSelector", "")))
            return self.reply(entry, 200, {"kind": kind.list_kind, "apiVersion": api_version(collection),
                                           "metadata": {"resourceVersion": str(STORE.rv)}, "items": deleted})
        if name is None and method == "POST":
            check_query(query, {"fieldManager", "fieldValidation"})
            obj = self.decode_object(collection, body)
            if obj.get("metadata", {}).get("resourceVersion"):
                raise bad_request("resourceVersion should not be set on objects to be created")
            obj.setdefault("metadata", {})["namespace"] = namespace
            if not namespace:
                obj["metadata"].pop("namespace")
            return self.reply(entry, 201, STORE.create(collection, obj))
        if name is None:
            raise ApiFailure(405, "MethodNotAllowed", f"the server does not allow this method on the requested resource")
        if method == "GET":
            check_query(query, {"resourceVersion"})
            return self.reply(entry, 200, STORE.get(collection, key))
        if method == "PUT":
            check_query(query, {"fieldManager", "fieldValidation"})
            obj = self.decode_object(collection, body)
            if obj.get("metadata", {}).get("name") != name:
                raise bad_request(f"the name of the object ({obj.get('metadata', {}).get('name')}) does not "
                                  f"match the name on the URL ({name})")
            expected = obj["metadata"].get("resourceVersion")
            return self.reply(entry, 200, STORE.update(collection, key, writer(kind, subresource, lambda _: obj),
                                                       expected))
        if method == "PATCH":
            check_query(query, {"fieldManager", "fieldValidation"})
            return self.reply(entry, 200, self.patch(collection, key, body, subresource))
        if method == "DELETE" and subresource is None:
            check_query(query, {"gracePeriodSeconds", "propagationPolicy"})
            return self.reply(entry, 200, STORE.delete(collection, key))
        raise ApiFailure(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")

    def decode_object(self, collection, body):
        kind = COLLECTIONS[collection]
        try:
            obj = json.loads(body or b"null")
        except ValueError as e:
            raise bad_request(f"json: cannot unmarshal the body: {e}")
        if not isinstance(obj, dict):
            raise bad_request("the body is not a JSON object")
        if kind.validate:  # a resource.k8s.io kind: unknown and mistyped fields, the real decoder's words
            problem = kind.decode(obj)
            if problem:
                raise bad_request(problem)
        else:
            field = kind.decode(obj)
            if field:
                raise bad_request(f"strict decoding error: unknown field \"{field}\"")
        if obj.get("kind", kind.kind) != kind.kind or obj.get("apiVersion", api_version(collection)) != api_version(collection):
            raise bad_request(f"the body is a {obj.get('apiVersion')}/{obj.get('kind')}, not a {kind.kind}")
        return obj

    def patch(self, collection, key, body, subresource=None):
        content_type = self.headers.get("Content-Type", "").split(";")[0].strip()
        if content_type not in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
            raise ApiFailure(415, "UnsupportedMediaType", f"the body of the request was in an unknown format - "
                             "accepted media types include: application/merge-patch+json, "
                             "application/strategic-merge-patch+json")
        patch = self.decode_object(collection, body)
        expected = (patch.get("metadata") or {}).get("resourceVersion")
        kind = COLLECTIONS[collection]
        return STORE.update(collection, key, writer(kind, subresource, lambda current: merge_patch(current, patch)),
                            expected)

    def list(self, collection, namespace, query):
        kind = COLLECTIONS[collection]
        fields = parse_field_selector(query.get("fieldSelector", ""), kind)
        labels = parse_label_selector(query.get("labelSelector", ""))
        with STORE.cond:
            items = [copy.deepcopy(obj) for (ns, _), obj in sorted(STORE.objects[collection].items())
                     if (not namespace or ns == namespace) and matches(obj, fields, labels)]
            rv = STORE.rv
        return {"kind": kind.list_kind, "apiVersion": api_version(collection), "metadata": {"resourceVersion": str(rv)},
                "items": items}

    def reply(self, entry, code, body):
        entry["code"] = code
        self.send_json(code, body)

    def send_json(self, code, body):
        data = json.dumps(body).encode() + b"\n"
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    # The watch: events after `resourceVersion` from the history (all objects as ADDED when it is unset
    # or "0"), then each new one, until timeoutSeconds, a close command or the client leaving.
    def watch(self, collection, namespace, query):
        fields = parse_field_selector(query.get("fieldSelector", ""), COLLECTIONS[collection])
        labels = parse_label_selector(query.get("labelSelector", ""))
        bookmarks = query.get("allowWatchBookmarks") == "true"
        try:
            seconds = int(query.get("timeoutSeconds", DEFAULT_WATCH_SECONDS))
        except ValueError:
            raise bad_request(f"invalid timeoutSeconds \"{query['timeoutSeconds']}\"")
        since = query.get("resourceVersion", "")
        if since not in ("", "0") and not since.isdigit():
            raise bad_request(f"invalid resource version \"{since}\"")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        kind = COLLECTIONS[collection]
        selected = lambda obj: (not namespace or obj["metadata"].get("namespace") == namespace) and matches(
            obj, fields, labels)
        with STORE.cond:
            STORE.watches += 1
            close_generation, bookmark_generation = STORE.close_generation, STORE.bookmark_generation
            if since in ("", "0"):
                first = [{"type": "ADDED", "object": copy.deepcopy(obj)}
                         for _, obj in sorted(STORE.objects[collection].items()) if selected(obj)]
                position = STORE.rv
            elif int(since) < STORE.compacted:
                first = [{"type": "ERROR", "object": status(
                    410, "Expired", f"too old resource version: {since} ({STORE.compacted})")}]
                position = None
            else:
                first, position = [], int(since)
        try:
            self.stream(collection, kind, first, position, selected, bookmarks, time.monotonic() + seconds,
                        close_generation, bookmark_generation)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            self.close_connection = True
        finally:
            with STORE.cond:
                STORE.watches -= 1

    def stream(self, collection, kind, pending, position, selected, bookmarks, deadline, close_generation,
               bookmark_generation):
        while True:
            for event in pending:
                self.send_chunk(json.dumps(event).encode() + b"\n")
            if position is None or self.client_left():
                break
            with STORE.cond:
                STORE.cond.wait(timeout=0.2)
                if STORE.close_generation != close_generation or time.monotonic() >= deadline:
                    break
                if position < STORE.compacted:
                    pending, position = [{"type": "ERROR", "object": status(
                        410, "Expired", f"too old resource version: {position} ({STORE.compacted})")}], None
                    continue
                pending = [{"type": t, "object": copy.deepcopy(o)} for rv, c, t, o in STORE.history
                           if rv > position and c == collection and selected(o)]
                position = STORE.rv
                if STORE.bookmark_generation != bookmark_generation:
                    bookmark_generation = STORE.bookmark_generation
                    if bookmarks:
                        pending.append({"type": "BOOKMARK", "object": {
                            "kind": kind.kind, "apiVersion": api_version(collection),
                            "metadata": {"resourceVersion": str(position), "creationTimestamp": None}}})
                    bookmark_due = True
                else:
                    bookmark_due = False
            if bookmark_due:
                for event in pending:
                    self.send_chunk(json.dumps(event).encode() + b"\n")
                pending = []
                with STORE.cond:
                    STORE.bookmarks_written += 1
                    STORE.cond.notify_all()
        self.send_chunk(b"")
        self.close_connection = True

    def client_left(self):
        """Whether the client closed its side: it sends nothing more on a watch's connection, so anything
        readable is its end (a FIN or TLS close_notify)."""
        readable, _, _ = select.select([self.connection], [], [], 0)
        return bool(readable)

    def send_chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()


class ControlHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # noqa: A002
        pass

    def do_GET(self):
        with STORE.cond:
            if self.path == "/requests":
                return self.answer(200, {"requests": copy.deepcopy(STORE.requests)})
            if self.path == "/watches":
                return self.answer(200, {"open": STORE.watches})
            if self.path == "/state":
                return self.answer(200, {"resourceVersion": str(STORE.rv), "compacted": str(STORE.compacted)})
        self.answer(404, {"error": f"no control GET {self.path}"})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        try:
            args = json.loads(self.rfile.read(length) or b"{}")
            handler = CONTROL.get(self.path)
            if handler is None:
                return self.answer(404, {"error": f"no control POST {self.path}"})
            self.answer(200, handler(args))
        except ApiFailure as failure:
            self.answer(failure.code, failure.body)
        except (ValueError, KeyError, TypeError) as e:
            self.answer(400, {"error": f"{type(e).__name__}: {e}"})

    def answer(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


NODES = ("", "v1", "nodes")


def control_label(args):
    def change(node):
        labels = node["metadata"].setdefault("labels", {})
        if args.get("value") is None:
            labels.pop(args["key"], None)
        else:
            labels[args["key"]] = str(args["value"])
        return node
    return STORE.update(NODES, ("", args["node"]), change)


def control_bookmark(_):
    with STORE.cond:
        STORE.bookmark_generation += 1
        target, watches = STORE.bookmarks_written + STORE.watches, STORE.watches
        STORE.cond.notify_all()
        STORE.cond.wait_for(lambda: STORE.bookmarks_written >= target, timeout=10)
        return {"resourceVersion": str(STORE.rv), "sent": watches}


def control_close(_):
    with STORE.cond:
        STORE.close_generation += 1
        STORE.cond.notify_all()
        return {"closed": STORE.watches}


def control_token(args):
    with STORE.cond:
        token = args["token"]
        if args.get("remove"):
            STORE.tokens.pop(token, None)
        elif args.get("expire"):
            STORE.tokens[token] = time.time() - 1
        else:
            expires_in = args.get("expires_in")
            STORE.tokens[token] = None if expires_in is None else time.time() + float(expires_in)
        return {"tokens": len(STORE.tokens)}


def control_stall(args):
    STORE.stall_until = time.time() + float(args["seconds"])
    return {"stalled": float(args["seconds"])}


CONTROL = {
    "/stall": control_stall,
    "/nodes": lambda a: STORE.create(NODES, {"metadata": {"name": a["name"], "labels": dict(a.get("labels", {}))}}),
    "/label": control_label,
    "/delete": lambda a: STORE.delete(NODES, ("", a["node"])),
    "/compact": lambda _: {"compacted": str(STORE.compact())},
    "/close-watches": control_close,
    "/bookmark": control_bookmark,
    "/token": control_token,
}


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A client that refused the certificate or left mid-stream: nothing for the test's log.
        pass


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def make_certificates(folder):
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    for ca in ("ca", "other-ca"):
        openssl("req", "-x509", *ec, "-keyout", f"{ca}.key", "-out", f"{ca}.crt", "-days", "2", "-subj",
                f"/CN=gpuctk-test-{ca}", "-addext", "basicConstraints=critical,CA:TRUE", "-addext",
                "keyUsage=critical,keyCertSign,cRLSign", cwd=folder)
    leaves = {"server": ("kube-apiserver", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n"),
              "client": (USER_CERT_NAME, "extendedKeyUsage=clientAuth\n")}
    for leaf, (name, extensions) in leaves.items():
        with open(os.path.join(folder, f"{leaf}.ext"), "w") as f:
            f.write(extensions)
        openssl("req", *ec, "-keyout", f"{leaf}.key", "-out", f"{leaf}.csr", "-subj", f"/CN={name}", cwd=folder)
        openssl("x509", "-req", "-in", f"{leaf}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                "-out", f"{leaf}.crt", "-days", "2", "-extfile", f"{leaf}.ext", cwd=folder)


def write_atomic(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def write_client_files(folder, token, api_port):
    account = os.path.join(folder, "serviceaccount")
    os.makedirs(account, exist_ok=True)
    write_atomic(os.path.join(account, "token"), token)
    write_atomic(os.path.join(account, "namespace"), "gpuctk-test")
    with open(os.path.join(folder, "ca.crt")) as f:
        write_atomic(os.path.join(account, "ca.crt"), f.read())
    write_atomic(os.path.join(folder, "kubeconfig"), f"""apiVersion: v1
kind: Config
current-context: test
clusters:
- name: test
  cluster:
    server: https://127.0.0.1:{api_port}
    certificate-authority: {os.path.join(folder, "ca.crt")}
users:
- name: test
  user:
    tokenFile: {os.path.join(account, "token")}
contexts:
- name: test
  context:
    cluster: test
    user: test
""")


def serve(server):
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return thread


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", required=True)
    parser.add_argument("--token", default="gpuctk-test-token-1")
    parser.add_argument("--node", action="append", default=[], help="NAME[:KEY=VALUE,...]")
    parser.add_argument("--resource-types", help="k8s.io/api/resource/v1/types.go: serve resource.k8s.io/v1")
    args = parser.parse_args()
    if args.resource_types:
        try:
            add_dra_kinds(args.resource_types)
        except ValueError as e:
            print(f"apiserver.py: error: --resource-types {e}", file=sys.stderr)
            return 1
    folder = os.path.abspath(args.dir)
    os.makedirs(folder, exist_ok=True)
    make_certificates(folder)
    STORE.tokens[args.token] = None
    for spec in args.node:
        name, _, label_text = spec.partition(":")
        labels = dict(item.split("=", 1) for item in filter(None, label_text.split(",")))
        STORE.create(NODES, {"metadata": {"name": name, "labels": labels}})

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(os.path.join(folder, "server.crt"), os.path.join(folder, "server.key"))
    context.load_verify_locations(os.path.join(folder, "ca.crt"))
    context.verify_mode = ssl.CERT_OPTIONAL  # a client certificate authenticates; a token does too
    api = QuietServer(("127.0.0.1", 0), ApiHandler)
    # The handshake runs in the request's thread (its first read), never in the accepting one.
    api.socket = context.wrap_socket(api.socket, server_side=True, do_handshake_on_connect=False)
    control = QuietServer(("127.0.0.1", 0), ControlHandler)
    api_port, control_port = api.server_address[1], control.server_address[1]
    write_client_files(folder, args.token, api_port)
    write_atomic(os.path.join(folder, "port"), f"{api_port}\n")
    write_atomic(os.path.join(folder, "control-port"), f"{control_port}\n")
    serve(api)
    serve(control)
    write_atomic(os.path.join(folder, "ready"), f"{api_port} {control_port}\n")
    print(f"apiserver: port {api_port} control-port {control_port}", flush=True)

    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    done.wait()
    control_close(None)
    api.shutdown()
    control.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
