"""The resource.k8s.io/v1 kinds of tests/kube/apiserver.py (test code): ResourceSlice, ResourceClaim and
DeviceClass, their schemas read from the API's own Go types and their validation as the real API server's.

Schemas: `load_types(path)` parses k8s.io/api/resource/v1/types.go (Debian's golang-k8s-api-dev, which
scripts/deps.sh links into the test cache): each `type X struct {...}` becomes a dict json name -> schema,
following field types through pointers, slices ([]T: ListOf), maps (map[K]V: MapOf) and embedded structs
(`json:",inline"`). Types the file does not define are leaves (Leaf, with the JSON type they decode from) or
the small hand schemas below (ObjectMeta, NodeSelector, Condition). The constants (`const X = 128`,
`10 * 1024`, one constant naming another, validation.DNS1123SubdomainMaxLength) are evaluated by name;
NEEDED_CONSTANTS lists those validation uses, and a file without one of them fails at load with one line,
so that an API change shows rather than a limit silently kept.

Validation (`validate_slice`, `validate_claim`, `validate_claim_status`, `validate_class`) follows the rules
types.go's comments state (k8s.io/kubernetes pkg/apis/resource/validation is their implementation, not
available here) and returns FieldError rows that apiserver.py turns into the real 422 Invalid Status.
"""

import json
import re

# Types from other packages: leaves (what JSON they decode from) or hand schemas, built in schema_of.
OBJECT_META_FIELDS = (
    "name", "generateName", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
    "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences",
    "finalizers", "managedFields", "selfLink",
)
NEEDED_CONSTANTS = (
    "DriverNameMaxLength", "PoolNameMaxLength", "ResourceSliceMaxDevices",
    "ResourceSliceMaxDevicesWithAdvancedFeatures", "ResourceSliceMaxAttributesAndCapacitiesPerDevice",
    "DeviceMaxDomainLength", "DeviceMaxIDLength", "DeviceAttributeMaxValueLength", "DeviceTaintsMaxLength",
    "AllocationResultsMaxSize", "DeviceRequestsMaxSize", "DeviceSelectorsMaxSize",
    "CELSelectorExpressionMaxLength", "ResourceClaimReservedForMaxSize", "DeviceTolerationsMaxLength",
)
# Constants of other packages that types.go's constants name (k8s.io/apimachinery's validation).
EXTERNAL_CONSTANTS = {"validation.DNS1123SubdomainMaxLength": 253}


class Leaf:
    """A scalar: `json_types` are the JSON types it decodes from, `go` its Go type for the error."""

    def __init__(self, go, *json_types):
        self.go, self.json_types = go, json_types


class ListOf:
    def __init__(self, item):
        self.item = item


class MapOf:
    def __init__(self, value):
        self.value = value


ANY = None  # any JSON value, not checked further (runtime.RawExtension, a Status's details)
STRING = Leaf("string", str)
INT = Leaf("int64", int)
BOOL = Leaf("bool", bool)
QUANTITY = Leaf("resource.Quantity", str, int, float)  # a number decodes too (Quantity.UnmarshalJSON)
BUILTIN = {"string": STRING, "int64": INT, "int32": INT, "int": INT, "bool": BOOL}
SELECTOR_REQUIREMENT = {"key": STRING, "operator": STRING, "values": ListOf(STRING)}
EXTERNAL = {
    "metav1.TypeMeta": {"kind": STRING, "apiVersion": STRING},
    "metav1.ObjectMeta": {name: ANY for name in OBJECT_META_FIELDS},
    "metav1.ListMeta": ANY,
    "metav1.Time": Leaf("metav1.Time", str),
    "metav1.Condition": {"type": STRING, "status": STRING, "observedGeneration": INT,
                         "lastTransitionTime": STRING, "reason": STRING, "message": STRING},
    "v1.NodeSelector": {"nodeSelectorTerms": ListOf({"matchExpressions": ListOf(SELECTOR_REQUIREMENT),
                                                     "matchFields": ListOf(SELECTOR_REQUIREMENT)})},
    "v1.ResourceName": STRING,
    "resource.Quantity": QUANTITY,
    "runtime.RawExtension": ANY,
    "types.UID": STRING,
}


class GoTypes:
    """The structs (name -> [(json name or "" inline, Go type)]), named string types and constants of one
    types.go."""

    def __init__(self, text):
        text = re.sub(r"//[^\n]*", "", text)
        self.structs = {}
        for name, body in re.findall(r"\btype\s+(\w+)\s+struct\s*\{([^}]*)\}", text):
            self.structs[name] = re.findall(r'(?m)^\s*(?:\w+\s+)?([\w.*\[\]]+)\s+`json:"([^",]*)[^`]*`', body)
        self.named = dict(re.findall(r"(?m)^type\s+(\w+)\s+(\w+)\s*$", text))
        self.constants = self.evaluate(re.findall(r"(?m)^\s*(?:const\s+)?(\w+)(?:\s+\w+)?\s*=\s*([^\n]+?)\s*$",
                                                  self.const_text(text)))

    @staticmethod
    def const_text(text):
        blocks = re.findall(r"(?s)\bconst\s*\((.*?)\)", text)
        singles = re.findall(r"(?m)^const\s+\w+(?:\s+\w+)?\s*=[^\n]*$", text)
        return "\n".join(blocks + singles)

    @staticmethod
    def evaluate(pairs):
        """Integer constants by name: literals, products and sums of them, other constants' names."""
        raw, values = dict(pairs), dict(EXTERNAL_CONSTANTS)
        for _ in range(len(raw) + 1):
            for name, expression in raw.items():
                if name in values:
                    continue
                terms = re.split(r"\s*([*+])\s*", re.sub(r"^\w+\((\w+|\"[^\"]*\")\)$", r"\1", expression))
                known = [t if t in "*+" else values.get(t, int(t) if t.isdigit() else None) for t in terms]
                if all(k is not None for k in known):
                    values[name] = eval("".join(map(str, known)))  # digits and * + only
        return values

    def schema(self, name):
        """The schema of struct `name`."""
        fields = {}
        for go_type, json_name in self.structs[name]:
            if json_name:
                fields[json_name] = self.schema_of(go_type)
                continue
            inline = self.schema_of(go_type)  # an embedded struct: its fields are this one's
            if not isinstance(inline, dict):
                raise ValueError(f"{name}: inline {go_type} is not a struct")
            fields.update(inline)
        return fields

    def schema_of(self, go_type):
        go_type = go_type.lstrip("*")
        if go_type.startswith("[]"):
            return ListOf(self.schema_of(go_type[2:]))
        if go_type.startswith("map["):
            return MapOf(self.schema_of(go_type[go_type.index("]") + 1:]))
        if go_type in self.structs:
            return self.schema(go_type)
        if go_type in self.named:
            return self.schema_of(self.named[go_type])
        if go_type in BUILTIN:
            return BUILTIN[go_type]
        if go_type in EXTERNAL:
            return EXTERNAL[go_type]
        raise ValueError(f"field type {go_type} is neither defined in the file nor known to dra_kinds.py")


def load_types(path):
    """(schemas by kind, constants), or ValueError with one line naming what the file lacks."""
    try:
        with open(path, encoding="utf-8") as f:
            types = GoTypes(f.read())
    except OSError as e:
        raise ValueError(f"{path}: {e.strerror}") from None
    missing = [n for n in NEEDED_CONSTANTS if n not in types.constants]
    missing += [k for k in ("ResourceSlice", "ResourceClaim", "DeviceClass") if k not in types.structs]
    if missing:
        raise ValueError(f"{path}: no {', '.join(missing)} (has the resource.k8s.io/v1 API changed?)")
    try:
        schemas = {kind: types.schema(kind) for kind in ("ResourceSlice", "ResourceClaim", "DeviceClass")}
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    return schemas, types.constants


def decode_error(value, schema, path=""):
    """The first field of `value` that `schema` does not know or whose JSON type its Go type cannot take,
    as the real server's strict decoding says it, or None."""
    if schema is ANY or value is None:
        return None
    if isinstance(schema, Leaf):
        ok = isinstance(value, schema.json_types) and not (bool not in schema.json_types and isinstance(value, bool))
        return None if ok else f"json: cannot unmarshal {json_type(value)} into Go struct field {path} of type {schema.go}"
    if isinstance(schema, ListOf):
        if not isinstance(value, list):
            return f"json: cannot unmarshal {json_type(value)} into Go struct field {path} of type slice"
        return next(filter(None, (decode_error(v, schema.item, f"{path}[{i}]") for i, v in enumerate(value))), None)
    if not isinstance(value, dict):
        return f"json: cannot unmarshal {json_type(value)} into Go struct field {path} of type object"
    if isinstance(schema, MapOf):
        return next(filter(None, (decode_error(value[k], schema.value, f"{path}[{k}]") for k in sorted(value))), None)
    for key in sorted(value):
        if key not in schema:
            return f"strict decoding error: unknown field \"{path}{'.' if path else ''}{key}\""
        found = decode_error(value[key], schema[key], f"{path}{'.' if path else ''}{key}")
        if found:
            return found
    return None


def json_type(value):
    return {bool: "bool", int: "number", float: "number", str: "string", list: "array", dict: "object"}.get(
        type(value), "null")


# Field errors, as k8s.io/apimachinery's field.Error prints them: "<path>: <type>: <detail>".
class FieldError:
    def __init__(self, path, reason, text):
        self.path, self.reason, self.text = path, reason, text

    def __str__(self):
        return f"{self.path}: {self.text}"


def go_value(value):
    return json.dumps(value) if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def invalid(path, value, detail):
    return FieldError(path, "FieldValueInvalid", f"Invalid value: {go_value(value)}: {detail}")


def required(path, detail=""):
    return FieldError(path, "FieldValueRequired", "Required value" + (f": {detail}" if detail else ""))


def too_many(path, have, limit):
    return FieldError(path, "FieldValueTooMany", f"Too many: {have}: must have at most {limit} items")


def too_long(path, limit):
    return FieldError(path, "FieldValueTooLong", f"Too long: may not be more than {limit} bytes")


def duplicate(path, value):
    return FieldError(path, "FieldValueDuplicate", f"Duplicate value: {go_value(value)}")


def not_supported(path, value, supported):
    listed = ", ".join(json.dumps(s) for s in supported)
    return FieldError(path, "FieldValueNotSupported", f"Unsupported value: {go_value(value)}: supported values: {listed}")


# Name formats (k8s.io/apimachinery/pkg/util/validation).
LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
SUBDOMAIN = LABEL + r"(\." + LABEL + r")*"
C_IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]*"
QUALIFIED_NAME_PART = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_MESSAGE = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
                 "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
                 f"validation is '{LABEL}')")
SUBDOMAIN_MESSAGE = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
                     "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
                     f"for validation is '{SUBDOMAIN}')")
C_IDENTIFIER_MESSAGE = ("a valid C identifier must start with alphabetic character or '_', followed by a string of "
                        f"alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used "
                        f"for validation is '{C_IDENTIFIER}')")
# semver.org 2.0.0's regular expression.
SEMVER = (r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
          r"(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?")
# k8s.io/apimachinery/pkg/api/resource: <sign><digits>[.<digits>][<binary SI> | <decimal SI> | e<exponent>].
QUANTITY_RE = r"[+-]?(\d+\.?\d*|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\d+)?"
TAINT_EFFECTS = ("NoExecute", "NoSchedule", "None")


def full(pattern, text):
    return isinstance(text, str) and re.fullmatch(pattern, text) is not None


def label_errors(path, value):
    if not isinstance(value, str) or value == "":
        return [required(path)]
    out = [too_long(path, 63)] if len(value) > 63 else []
    return out + ([] if full(LABEL, value) else [invalid(path, value, LABEL_MESSAGE)])


def subdomain_errors(path, value, limit=253):
    if not isinstance(value, str) or value == "":
        return [required(path)]
    out = [too_long(path, limit)] if len(value) > limit else []
    return out + ([] if full(SUBDOMAIN, value) else [invalid(path, value, SUBDOMAIN_MESSAGE)])


def pool_name_errors(path, value, c):
    """One or more DNS subdomains separated by slashes, at most PoolNameMaxLength in all."""
    if not isinstance(value, str) or value == "":
        return [required(path)]
    out = [too_long(path, c["PoolNameMaxLength"])] if len(value) > c["PoolNameMaxLength"] else []
    for part in value.split("/"):
        if not full(SUBDOMAIN, part):
            return out + [invalid(path, value, "a valid pool name must be one or more DNS sub-domains separated "
                                  f"by slashes ({SUBDOMAIN_MESSAGE})")]
    return out


def qualified_name_errors(path, name, c):
    """An attribute or capacity name: a C identifier, optionally "<DNS subdomain>/" before it."""
    domain, slash, ident = name.rpartition("/")
    out = []
    if slash:
        if not full(SUBDOMAIN, domain):
            out.append(invalid(path, domain, SUBDOMAIN_MESSAGE))
        if len(domain) > c["DeviceMaxDomainLength"]:
            out.append(too_long(path, c["DeviceMaxDomainLength"]))
    if ident == "":
        out.append(required(path, "the attribute name is empty"))
    elif not full(C_IDENTIFIER, ident):
        out.append(invalid(path, ident, C_IDENTIFIER_MESSAGE))
    elif len(ident) > c["DeviceMaxIDLength"]:
        out.append(too_long(path, c["DeviceMaxIDLength"]))
    return out


def label_key_errors(path, key):
    """A label key ("qualified name"): [<DNS subdomain>/]<name of up to 63 characters>."""
    prefix, slash, name = key.rpartition("/") if isinstance(key, str) else ("", "", "")
    if not isinstance(key, str) or key == "":
        return [required(path)]
    message = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
               f"an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation "
               f"is '{QUALIFIED_NAME_PART}')")
    if slash and not full(SUBDOMAIN, prefix):
        return [invalid(path, key, "prefix part " + SUBDOMAIN_MESSAGE)]
    if len(name) > 63:
        return [invalid(path, key, "name part must be no more than 63 characters")]
    return [] if full(QUALIFIED_NAME_PART, name) else [invalid(path, key, message)]


def label_value_errors(path, value):
    if value in (None, ""):
        return []
    if not isinstance(value, str) or len(value) > 63 or not full(QUALIFIED_NAME_PART, value):
        return [invalid(path, value, "a valid label must be an empty string or consist of alphanumeric "
                        "characters, '-', '_' or '.', and must start and end with an alphanumeric character, "
                        "at most 63 characters")]
    return []


def quantity_errors(path, value):
    text = str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value
    if full(QUANTITY_RE, text):
        return []
    return [invalid(path, value, "quantities must match the regular expression "
                    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")]


def node_selector_errors(path, selector):
    terms = (selector or {}).get("nodeSelectorTerms") or []
    if len(terms) != 1:
        return [invalid(f"{path}.nodeSelectorTerms", len(terms), "must have exactly one node selector term")]
    out = []
    for kind in ("matchExpressions", "matchFields"):
        for i, req in enumerate(terms[0].get(kind) or []):
            where = f"{path}.nodeSelectorTerms[0].{kind}[{i}]"
            operator = req.get("operator")
            if operator not in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"):
                out.append(not_supported(f"{where}.operator", operator,
                                         ["DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn"]))
            elif operator in ("In", "NotIn") and not req.get("values"):
                out.append(required(f"{where}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
            if kind == "matchFields" and req.get("key") != "metadata.name":
                out.append(invalid(f"{where}.key", req.get("key"), "not a valid field selector key"))
    return out


def exactly_one(path, names, what):
    """The one-of rule: exactly one of `names` (those given) set."""
    if not names:
        return [required(path, f"exactly one of {what} is required")]
    if len(names) > 1:
        return [invalid(path, "{" + ", ".join(f"`{n}`" for n in names) + "}",
                        f"exactly one of {what} is required, but multiple fields are set")]
    return []


def meta_name_errors(obj):
    return subdomain_errors("metadata.name", (obj.get("metadata") or {}).get("name"))


# ResourceSlice.
def validate_slice(obj, c, old=None):
    spec = obj.get("spec") or {}
    out = meta_name_errors(obj) + subdomain_errors("spec.driver", spec.get("driver"), c["DriverNameMaxLength"])
    pool = spec.get("pool") or {}
    out += pool_name_errors("spec.pool.name", pool.get("name"), c)
    if pool.get("generation", 0) < 0:
        out.append(invalid("spec.pool.generation", pool["generation"], "must be greater than or equal to 0"))
    if pool.get("resourceSliceCount", 0) <= 0:
        out.append(invalid("spec.pool.resourceSliceCount", pool.get("resourceSliceCount", 0),
                           "must be greater than zero"))
    chosen = [n for n in ("nodeName", "nodeSelector") if spec.get(n) is not None]
    chosen += [n for n in ("allNodes", "perDeviceNodeSelection") if spec.get(n) is True]
    out += exactly_one("spec", chosen, "`nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection`")
    if spec.get("nodeName") is not None:
        out += subdomain_errors("spec.nodeName", spec["nodeName"])
    if spec.get("nodeSelector") is not None:
        out += node_selector_errors("spec.nodeSelector", spec["nodeSelector"])
    devices = spec.get("devices") or []
    if devices and spec.get("sharedCounters"):
        out.append(invalid("spec", "{`devices`, `sharedCounters`}", "only one of `devices` and `sharedCounters` "
                           "may be set"))
    advanced = any((d or {}).get("taints") or (d or {}).get("consumesCounters") for d in devices)
    limit = c["ResourceSliceMaxDevicesWithAdvancedFeatures"] if advanced else c["ResourceSliceMaxDevices"]
    if len(devices) > limit:
        out.append(too_many("spec.devices", len(devices), limit))
    seen = set()
    for i, device in enumerate(devices):
        device = devices[i] = device or {}
        out += device_errors(f"spec.devices[{i}]", device, spec.get("perDeviceNodeSelection") is True, c)
        if device.get("name") in seen:
            out.append(duplicate(f"spec.devices[{i}].name", device["name"]))
        seen.add(device.get("name"))
    if old is not None:
        old_spec = old.get("spec") or {}
        for path, new_value, old_value in (("spec.driver", spec.get("driver"), old_spec.get("driver")),
                                           ("spec.pool.name", pool.get("name"), (old_spec.get("pool") or {}).get("name")),
                                           ("spec.nodeName", spec.get("nodeName"), old_spec.get("nodeName"))):
            if new_value != old_value:
                out.append(invalid(path, new_value, "field is immutable"))
    return out


def device_errors(path, device, per_device, c):
    out = label_errors(f"{path}.name", device.get("name"))
    attributes, capacity = device.get("attributes") or {}, device.get("capacity") or {}
    if len(attributes) + len(capacity) > c["ResourceSliceMaxAttributesAndCapacitiesPerDevice"]:
        out.append(too_many(path, len(attributes) + len(capacity),
                            c["ResourceSliceMaxAttributesAndCapacitiesPerDevice"]))
    for name in sorted(attributes):
        out += qualified_name_errors(f"{path}.attributes[{name}]", name, c)
        out += attribute_errors(f"{path}.attributes[{name}]", attributes[name] or {}, c)
    for name in sorted(capacity):
        out += qualified_name_errors(f"{path}.capacity[{name}]", name, c)
        if (capacity[name] or {}).get("value") is None:
            out.append(required(f"{path}.capacity[{name}].value"))
        else:
            out += quantity_errors(f"{path}.capacity[{name}].value", capacity[name]["value"])
    chosen = [n for n in ("nodeName", "nodeSelector") if device.get(n) is not None]
    chosen += ["allNodes"] if device.get("allNodes") is True else []
    if per_device:
        out += exactly_one(path, chosen, "`nodeName`, `nodeSelector`, `allNodes`")
    elif chosen:
        out.append(invalid(f"{path}.{chosen[0]}", device[chosen[0]],
                           "must only be set if `spec.perDeviceNodeSelection` is set to true"))
    taints = device.get("taints") or []
    if len(taints) > c["DeviceTaintsMaxLength"]:
        out.append(too_many(f"{path}.taints", len(taints), c["DeviceTaintsMaxLength"]))
    for i, taint in enumerate(taints):
        out += taint_errors(f"{path}.taints[{i}]", taint or {})
    return out


def attribute_errors(path, attribute, c):
    """Exactly one of int, bool, string, version; the list forms need DRAListTypeAttributes, an alpha
    feature gate off in this server (as in a default 1.34 cluster)."""
    lists = [k for k in ("ints", "bools", "strings", "versions") if attribute.get(k) is not None]
    if lists:
        return [FieldError(f"{path}.{lists[0]}", "FieldValueForbidden",
                           "Forbidden: list-type attributes need the DRAListTypeAttributes feature gate")]
    out = exactly_one(path, [k for k in ("int", "bool", "string", "version") if attribute.get(k) is not None],
                      "`int`, `bool`, `string`, `version`")
    limit = c["DeviceAttributeMaxValueLength"]
    for key in ("string", "version"):
        if isinstance(attribute.get(key), str) and len(attribute[key]) > limit:
            out.append(too_long(f"{path}.{key}", limit))
    version = attribute.get("version")
    if isinstance(version, str) and not full(SEMVER, version):
        out.append(invalid(f"{path}.version", version, "must be a string compatible with semver.org spec 2.0.0"))
    return out


def taint_errors(path, taint):
    out = label_key_errors(f"{path}.key", taint.get("key"))
    out += label_value_errors(f"{path}.value", taint.get("value"))
    effect = taint.get("effect")
    if not effect:
        out.append(required(f"{path}.effect"))
    elif effect not in TAINT_EFFECTS:
        out.append(not_supported(f"{path}.effect", effect, TAINT_EFFECTS))
    return out


# ResourceClaim.
def validate_claim(obj, c, old=None):
    out = meta_name_errors(obj)
    devices = (obj.get("spec") or {}).get("devices") or {}
    requests = devices.get("requests") or []
    if len(requests) > c["DeviceRequestsMaxSize"]:
        out.append(too_many("spec.devices.requests", len(requests), c["DeviceRequestsMaxSize"]))
    names = set()
    for i, request in enumerate(requests):
        request, path = request or {}, f"spec.devices.requests[{i}]"
        out += label_errors(f"{path}.name", request.get("name"))
        if request.get("name") in names:
            out.append(duplicate(f"{path}.name", request["name"]))
        names.add(request.get("name"))
        chosen = [k for k in ("exactly", "firstAvailable") if request.get(k)]
        out += exactly_one(path, chosen, "`exactly`, `firstAvailable`")
        if request.get("exactly"):
            out += exact_request_errors(f"{path}.exactly", request["exactly"], c)
        for j, sub in enumerate(request.get("firstAvailable") or []):
            sub = sub or {}
            out += label_errors(f"{path}.firstAvailable[{j}].name", sub.get("name"))
            out += exact_request_errors(f"{path}.firstAvailable[{j}]", sub, c)
    for kind in ("constraints", "config"):
        for i, entry in enumerate(devices.get(kind) or []):
            for j, name in enumerate((entry or {}).get("requests") or []):
                if str(name).split("/")[0] not in names:
                    out.append(invalid(f"spec.devices.{kind}[{i}].requests[{j}]", name,
                                       "must be the name of a request in the claim or the name of a request and "
                                       "its subrequest separated with '/'"))
    if old is not None and obj.get("spec") != old.get("spec"):
        out.append(invalid("spec", "{...}", "field is immutable"))
    return out + validate_claim_status(obj, c, old)


def exact_request_errors(path, request, c):
    out = subdomain_errors(f"{path}.deviceClassName", request.get("deviceClassName"))
    mode = request.get("allocationMode") or "ExactCount"
    if mode not in ("All", "ExactCount"):
        out.append(not_supported(f"{path}.allocationMode", mode, ["All", "ExactCount"]))
    elif mode == "ExactCount" and request.get("count", 1) <= 0:
        out.append(invalid(f"{path}.count", request.get("count"), "must be greater than zero"))
    elif mode == "All" and request.get("count"):
        out.append(invalid(f"{path}.count", request["count"], "must not be specified when allocationMode is 'All'"))
    selectors = request.get("selectors") or []
    if len(selectors) > c["DeviceSelectorsMaxSize"]:
        out.append(too_many(f"{path}.selectors", len(selectors), c["DeviceSelectorsMaxSize"]))
    for i, selector in enumerate(selectors):
        out += cel_errors(f"{path}.selectors[{i}]", selector or {}, c)
    tolerations = request.get("tolerations") or []
    if len(tolerations) > c["DeviceTolerationsMaxLength"]:
        out.append(too_many(f"{path}.tolerations", len(tolerations), c["DeviceTolerationsMaxLength"]))
    return out


def cel_errors(path, selector, c):
    expression = (selector.get("cel") or {}).get("expression")
    if selector.get("cel") is None:
        return [required(path, "exactly one of `cel` is required")]
    if not expression:
        return [required(f"{path}.cel.expression")]
    if len(expression) > c["CELSelectorExpressionMaxLength"]:
        return [too_long(f"{path}.cel.expression", c["CELSelectorExpressionMaxLength"])]
    return []


def validate_claim_status(obj, c, old=None):
    status = obj.get("status") or {}
    allocation = status.get("allocation")
    out = []
    if allocation is not None:
        results = (allocation.get("devices") or {}).get("results") or []
        if len(results) > c["AllocationResultsMaxSize"]:
            out.append(too_many("status.allocation.devices.results", len(results), c["AllocationResultsMaxSize"]))
        names = {(r or {}).get("name") for r in ((obj.get("spec") or {}).get("devices") or {}).get("requests") or []}
        for i, result in enumerate(results):
            out += result_errors(f"status.allocation.devices.results[{i}]", result or {}, names, c)
        if allocation.get("nodeSelector") is not None:
            out += node_selector_errors("status.allocation.nodeSelector", allocation["nodeSelector"])
    reserved = status.get("reservedFor") or []
    if len(reserved) > c["ResourceClaimReservedForMaxSize"]:
        out.append(too_many("status.reservedFor", len(reserved), c["ResourceClaimReservedForMaxSize"]))
    if reserved and allocation is None:
        out.append(FieldError("status.reservedFor", "FieldValueForbidden",
                              "Forbidden: may not be specified when `allocated` is not set"))
    uids = set()
    for i, ref in enumerate(reserved):
        ref = ref or {}
        if ref.get("uid") in uids:
            out.append(duplicate(f"status.reservedFor[{i}].uid", ref["uid"]))
        uids.add(ref.get("uid"))
    old_allocation = ((old or {}).get("status") or {}).get("allocation")
    if old_allocation is not None and allocation is not None and old_allocation != allocation:
        out.append(invalid("status.allocation", "{...}", "field is immutable"))
    return out


def result_errors(path, result, names, c):
    out = []
    request = result.get("request")
    if not request:
        out.append(required(f"{path}.request"))
    elif request.split("/")[0] not in names:
        out.append(invalid(f"{path}.request", request, "must be the name of a request in the claim or the name of "
                           "a request and its subrequest separated with '/'"))
    out += subdomain_errors(f"{path}.driver", result.get("driver"), c["DriverNameMaxLength"])
    out += pool_name_errors(f"{path}.pool", result.get("pool"), c)
    out += label_errors(f"{path}.device", result.get("device"))
    return out


# DeviceClass.
def validate_class(obj, c, old=None):
    spec = obj.get("spec") or {}
    out = meta_name_errors(obj)
    selectors = spec.get("selectors") or []
    if len(selectors) > c["DeviceSelectorsMaxSize"]:
        out.append(too_many("spec.selectors", len(selectors), c["DeviceSelectorsMaxSize"]))
    for i, selector in enumerate(selectors):
        out += cel_errors(f"spec.selectors[{i}]", selector or {}, c)
    for i, config in enumerate(spec.get("config") or []):
        config = config or {}
        if config.get("opaque") is None:
            out.append(required(f"spec.config[{i}]", "exactly one of `opaque` is required"))
        else:
            out += subdomain_errors(f"spec.config[{i}].opaque.driver", config["opaque"].get("driver"),
                                    c["DriverNameMaxLength"])
    return out
