#!/usr/bin/env python3
"""Part of scripts/lint.sh: a doc may name only what exists, so that it cannot go on naming a file, a
command, an option, a build target or a test that was renamed or removed. What is checked, in the tracked
Markdown files (inline `code` and fenced code blocks) and the man page sources of packaging/man (their
lines that start with a program's name):

  paths     a backticked name starting with a top-level folder of this repository (`src/plugin/daemon.cpp`,
            `tests/kube/apiserver.py:12`, `deploy/kubernetes/`) exists; one starting with a module's
            folder (`inject/request.cpp`, `rootfs/sandbox`) exists below src/ or tests/. A unit may be
            named without its extension. A name with a placeholder (`<target>`, `*`, `...`) is checked up
            to the placeholder: its folder must exist.
  commands  text that starts with `gpuctk ` names a command that exists (`gpuctk cdi generate`; the words
            up to the first option or argument: a group's next word must be one of its commands) and only
            options gpuctk has, of any of its commands (a renamed or removed option fails; an option given to
            the wrong command does not). Text starting with `gpuctk-device-plugin`, `gpuctk-exporter`,
            `gpuctk-mps-control-daemon` or `gpuctk-dra-plugin` names only that program's options. Nothing
            else is read as an option: `--device` alone, or after `podman run`, `nvidia-ctk` or `kubelet`,
            is not gpuctk's.
  cmake     `-DGPUCTK_<NAME>` is an option() or cache variable of a CMakeLists.txt or cmake/*.cmake;
            `--target X`, `target_sources(X`, `target_link_libraries(X` and a bare `gpuctk_<name>` name
            a target (add_executable, add_library, add_custom_target), a CMake function, or (bare only) a
            metric name the sources spell ("gpuctk_..." in src/metrics).
  tests     `ctest -R REGEX` matches a test, `ctest -L REGEX` a label, and a bare test name
            (`e2e.prestart_runc`, `plugin.kubelet`: a word whose part before the first dot is the
            prefix of some test) is a test.

Where the names come from: the sources, never a build, so the check runs without one and sees every
optional part (the device plugin, the exporter) whatever a build enabled.
  commands  src/cli/app.cpp's k_groups and k_commands rows, the createContainer hooks' names
            (src/cdi/hook_args.hpp k_hook_* and src/steps/commands.cpp k_hooks rows);
  options   string literals made only of option names ("--output,-o", "--compat32,!--no-compat32",
            k_opt_link = "--link") in src/cli, src/steps and src/cdi/hook_args.hpp; the device plugin's
            flag table (src/plugin/config.cpp, {{"name", "alias"}, {"VARIABLE"}, ...}) and such
            literals in src/plugin; the exporter's in src/metrics; the DRA plugin's in src/dra/daemon.cpp;
  tests     add_test(NAME ...) in tests/**/CMakeLists.txt and fuzz/, with ${var} expanded from the
            enclosing foreach() lists and from the calls of the function that holds it (gpuctk_e2e_test
            (prestart_runc ...) is e2e.prestart_runc); a foreach(... RANGE) or an unknown variable is a
            wildcard; gtest_discover_tests(... TEST_PREFIX "kube.") gives the prefix kube. with a wildcard;
            labels: every value after LABELS.

    scripts/doc_refs.py [--root DIR] [FILE...]
        DIR: the tree whose sources and files are the truth (default: the current directory, which
        lint.sh makes the repository's root); FILEs: the docs to check (default: the tracked *.md files
        but tests/golden/ and fixtures/, and packaging/man/*). Prints "FILE:LINE: `NAME` <why>" per miss;
        exit 1 if any.
"""
import glob
import os
import re
import subprocess
import sys

# The repository's own top-level folders: a backticked name starting with one of them is a path here.
ROOTS = ("src/", "tests/", "scripts/", "deploy/", "docs/", "bench/", "fuzz/", "fixtures/", "cmake/",
         "packaging/", ".ci/")
# A unit may be named without its extension (`src/metrics/grpc_unary`, `bench/plugin_client`).
UNIT_SUFFIXES = ("", ".cpp", ".hpp", ".h", ".c", ".py", ".sh")
TICKED = re.compile(r"`([^`\n]+)`")
PLACEHOLDER = re.compile(r"[<*{…$]|\.\.\.")
OPTION_LIST = re.compile(r'"(!?--?[A-Za-z0-9][A-Za-z0-9._-]*(?:,!?--?[A-Za-z0-9][A-Za-z0-9._-]*)*)"')
OPTION = re.compile(r"^--?[A-Za-z0-9][A-Za-z0-9._-]*")
WORD = re.compile(r"^[a-z][a-z0-9-]*$")
# The programs whose options are checked, and where their options are declared.
PROGRAMS = ("gpuctk", "gpuctk-device-plugin", "gpuctk-exporter", "gpuctk-mps-control-daemon",
            "gpuctk-dra-plugin")
WILD = "\0"  # a wildcard inside a test name template
FILE_SUFFIXES = ("json", "yaml", "yml", "toml", "conf", "sh", "py", "cpp", "hpp", "md", "txt", "deb", "so",
                 "service", "path", "rules", "proto", "xml", "csv", "tar", "gz", "cmake", "d")


def read(root, path):
    try:
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def sources(root, *patterns):
    for pattern in patterns:
        for path in sorted(glob.glob(os.path.join(root, pattern), recursive=True)):
            with open(path, encoding="utf-8", errors="replace") as f:
                yield re.sub(r"(^|\s)//[^\n]*", r"\1", f.read())  # comments' examples are no options


def block(text, start):
    """The text of the C++ brace block that follows `start` (a table's initializer)."""
    at = text.find(start)
    if at < 0:
        return ""
    at = text.find("{", at)
    depth = 0
    for i in range(at, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[at:i + 1]
    return text[at:]


def option_literals(texts):
    names = set()
    for text in texts:
        for match in OPTION_LIST.finditer(text):
            names.update(name.lstrip("!") for name in match.group(1).split(","))
    return names


class Truth:
    """What exists, read from the sources of the tree at `root`."""

    def __init__(self, root):
        self.root = root
        self.commands = self.read_commands()
        self.options = {
            "gpuctk": option_literals(sources(root, "src/cli/*.cpp", "src/cli/*.hpp", "src/steps/*.cpp",
                                              "src/cdi/hook_args.hpp")) | {"--help", "-h", "--version"},
            "gpuctk-device-plugin": self.plugin_flags() | {"--help", "-h", "--version", "-v"},
            "gpuctk-exporter": option_literals(sources(root, "src/metrics/*.cpp")) | {"--help", "-h",
                                                                                     "--version"},
            "gpuctk-mps-control-daemon": option_literals(sources(root, "src/plugin/mps*.cpp")) |
            {"--help", "-h", "--version"},
            "gpuctk-dra-plugin": option_literals(sources(root, "src/dra/daemon.cpp")) | {"--help", "-h",
                                                                                     "--version"},
        }
        self.read_cmake()

    def read_commands(self):
        """{word: children} from the root: groups, commands, commands of commands, the hooks."""
        app = read(self.root, "src/cli/app.cpp")
        tree = {}
        for name in re.findall(r'\{\s*"([a-z0-9-]+)"\s*,', block(app, "k_groups[]")):
            tree.setdefault(name, {})
        rows = re.findall(r'\{\s*"([a-z0-9-]*)"\s*,\s*"([a-z0-9-]+)"\s*,', block(app, "k_commands[]"))
        for group, name in rows:
            if not group:
                tree.setdefault(name, {})
        for group, name in rows:
            if group:
                tree.setdefault(group, {})[name] = {}
        hook_args = read(self.root, "src/cdi/hook_args.hpp")
        constants = dict(re.findall(r'(k_hook_\w+)\s*=\s*"([a-z0-9-]+)"', hook_args))
        hooks = block(read(self.root, "src/steps/commands.cpp"), "k_hooks[]")
        for literal, constant in re.findall(r'\n\s*\{\s*(?:"([a-z0-9-]+)"|cdi::(k_hook_\w+))', hooks):
            name = literal or constants.get(constant)
            if name:
                tree.setdefault("hook", {})[name] = {}
        return tree

    def plugin_flags(self):
        config = read(self.root, "src/plugin/config.cpp")
        names = set()
        for group in re.findall(r'\{\{("[a-z0-9-]+"(?:\s*,\s*"[a-z0-9-]+")*)\}\s*,\s*\{', config):
            names.update("--" + name for name in re.findall(r'"([a-z0-9-]+)"', group))
        return names | option_literals(sources(self.root, "src/plugin/*.cpp"))

    def read_cmake(self):
        files = sorted(set(glob.glob(os.path.join(self.root, "**/CMakeLists.txt"), recursive=True) +
                           glob.glob(os.path.join(self.root, "cmake/*.cmake")) +
                           glob.glob(os.path.join(self.root, "packaging/*.cmake"))))
        files = [f for f in files if "/build/" not in os.path.relpath(f, self.root).join("//")]
        texts = []
        for path in files:
            with open(path, encoding="utf-8", errors="replace") as f:
                texts.append(re.sub(r"#[^\n]*", "", f.read()))
        cmake = "\n".join(texts)
        self.cmake_options = set(re.findall(r"\boption\(\s*(\w+)", cmake, re.I))
        self.cmake_options |= set(re.findall(r"\bset\(\s*(\w+)[^)]*\bCACHE\b", cmake, re.I))
        self.targets = set(re.findall(r"\badd_(?:executable|library|custom_target)\(\s*([\w.+-]+)", cmake, re.I))
        self.functions = set(re.findall(r"\b(?:function|macro)\(\s*(\w+)", cmake, re.I))
        self.labels = set()
        for match in re.finditer(r'\bLABELS\s+("[^"]*"|[^\s)]+)', cmake):
            self.labels.update(x for x in match.group(1).strip('"').split(";") if x and "$" not in x)
        self.test_functions = {}  # name -> (parameters, [add_test name templates])
        for match in re.finditer(r"\bfunction\(\s*(\w+)([^)]*)\)(.*?)\bendfunction\(", cmake, re.S | re.I):
            templates = re.findall(r"\badd_test\(\s*NAME\s+(\S+)", match.group(3))
            if templates:
                self.test_functions[match.group(1)] = (match.group(2).split(), templates)
        self.tests = set()
        for text in texts:
            self.tests |= self.test_names(text)
        for prefix in re.findall(r'gtest_discover_tests\([^)]*TEST_PREFIX\s+"([^"]+)"', cmake):
            self.tests.add(prefix + WILD)

    def test_names(self, text):
        """The add_test names of one CMake file, ${var} expanded as the module docstring says."""
        functions = self.test_functions
        body = re.sub(r"\bfunction\(.*?\bendfunction\(\s*\)", "", text, flags=re.S | re.I)
        names = set()
        loops = []  # (variable, values or None for a wildcard)
        call = re.compile(r"\b(" + "|".join([re.escape(f) for f in functions] or ["(?!)"]) + r")\(\s*(\S+)")
        for line in body.splitlines():
            loop = re.match(r"\s*foreach\(\s*(\w+)\s+(.*?)\)?\s*$", line, re.I)
            if loop:
                values = loop.group(2).split()
                loops.append((loop.group(1), None if not values or values[0] == "RANGE" or
                              any("$" in v for v in values) else values))
                continue
            if re.match(r"\s*endforeach\(", line, re.I):
                if loops:
                    loops.pop()
                continue
            for template in re.findall(r"\badd_test\(\s*NAME\s+(\S+)", line):
                names |= expand(template, loops)
            for match in call.finditer(line):
                params, templates = functions[match.group(1)]
                for argument in expand(match.group(2).rstrip(")"), loops):
                    for template in templates:
                        names |= expand(template.replace("${" + params[0] + "}", argument), loops)
        return names


def expand(template, loops):
    """Every name a template with ${var} stands for, given the enclosing foreach() lists."""
    names = {template}
    for variable, values in reversed(loops):
        token = "${" + variable + "}"
        names = {n.replace(token, v) for n in names for v in values} if values else \
            {n.replace(token, WILD) for n in names}
    return {re.sub(r"\$\{\w+\}", WILD, n).rstrip(")") for n in names}


def test_regex(name):
    return re.compile("^" + "[A-Za-z0-9_./-]+".join(map(re.escape, name.split(WILD))) + "$")


class Checker:
    def __init__(self, truth):
        self.truth = truth
        self.concrete = {n for n in truth.tests if WILD not in n}
        self.templates = [test_regex(n) for n in truth.tests if WILD in n]
        self.samples = self.concrete | {n.replace(WILD, "X0") for n in truth.tests if WILD in n}
        self.prefixes = {n.split(".", 1)[0] for n in truth.tests if "." in n}

    # -- paths
    def path_exists(self, name):
        name = re.sub(r":\d+(-\d+)?$", "", name)  # path:line
        cut = PLACEHOLDER.search(name)
        if cut:
            name = name[:cut.start()]
            name = name[:name.rfind("/") + 1] if "/" in name else name
        name = name.rstrip("/") or "."
        return any(os.path.exists(os.path.join(self.truth.root, name + suffix)) for suffix in UNIT_SUFFIXES)

    def paths(self, text):
        for word in text.split():
            word = word.strip("\"'(),;")
            if word.startswith(ROOTS) and not self.path_exists(word):
                yield word, "names no file or folder"
            elif word.split("/", 1)[0] in self.modules() and "/" in word and not (
                    self.path_exists("src/" + word) or self.path_exists("tests/" + word)):
                yield word, "names no file or folder of src/ or tests/"

    def modules(self):
        if not hasattr(self, "_modules"):
            src = os.path.join(self.truth.root, "src")
            self._modules = {d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d))} \
                if os.path.isdir(src) else set()
        return self._modules

    # -- commands and options
    def command_line(self, words):
        """words: a command line split at blanks, words[0] one of PROGRAMS."""
        program = words[0]
        if program == "gpuctk":
            node, at, path = self.truth.commands, 1, "gpuctk"
            while at < len(words) and WORD.match(words[at]):
                word = words[at]
                if word in node:
                    node, path = node[word], path + " " + word
                elif node is self.truth.commands or (node and not self.runs_alone(path)):
                    yield f"{path} {word}", "names no gpuctk command"
                    return
                elif node:
                    return  # the shim's own command line (`gpuctk runtime run …`): runc's options
                else:
                    break
                at += 1
        for word in words[1:]:
            word = word.strip("[](),;'\"")
            if word.startswith("<") or word in ("|", "||", "&&", ";", ">", "<", "#"):
                if word in ("|", "||", "&&", ";", "#"):
                    return
                continue
            option = OPTION.match(word)
            if option and word != "-" and not word.startswith("---"):
                name = option.group(0).rstrip(".")
                if name not in self.truth.options[program]:
                    yield f"{program} … {name}", f"names no option of {program}"

    def runs_alone(self, path):
        """A command that also runs without a subcommand (gpuctk runtime: the shim, runc's arguments)."""
        app = read(self.truth.root, "src/cli/app.cpp")
        name = path.split()[-1]
        return re.search(r'\{\s*""\s*,\s*"' + re.escape(name) + '"', block(app, "k_commands[]")) is not None

    def commands(self, text):
        text = text.replace("\\|", "|")
        words = text.split()
        if words and words[0] in PROGRAMS and (len(words) > 1 or text.startswith(words[0])):
            yield from self.command_line(words)

    # -- cmake
    def cmake(self, text):
        for option in re.findall(r"(?<![\w-])-D(GPUCTK_\w+)", text):
            if option not in self.truth.cmake_options:
                yield "-D" + option, "names no CMake option or cache variable"
        known = self.truth.targets | self.truth.functions
        for target in re.findall(r"(?:--target\s+|target_sources\(\s*|target_link_libraries\(\s*)([\w.+-]+)", text):
            if target not in known:
                yield target, "names no CMake target"
        for name in re.findall(r"(?<![\w/.-])(gpuctk_[a-z0-9_]+)(?![\w/.-])", text):
            if name not in known and name not in self.metrics():
                yield name, "names no CMake target or function"

    def metrics(self):
        if not hasattr(self, "_metrics"):
            self._metrics = set(re.findall(r'"(gpuctk_[a-z0-9_]+)"', "".join(sources(self.truth.root,
                                                                                  "src/metrics/*.cpp"))))
        return self._metrics

    # -- tests
    def ctest(self, text):
        for flag, value in re.findall(r"(?:^|\s)(-R|-L|--tests-regex|--label-regex)\s+('[^']*'|\"[^\"]*\"|\S+)",
                                      text):
            value = value.strip("'\"")
            if "<" in value or "…" in value:
                continue
            try:
                pattern = re.compile(value)
            except re.error:
                yield value, "is no regular expression"
                continue
            pool = self.truth.labels if flag in ("-L", "--label-regex") else self.samples
            literal = value.strip("^$").replace("\\.", ".")
            if pool is self.samples and any(t.match(literal) for t in self.templates):
                continue  # a whole name of a template (`unit.shard1`)
            if not any(pattern.search(name) for name in pool):
                yield value, "matches no ctest label" if pool is self.truth.labels else "matches no ctest test"

    def test_names(self, text):
        for name in re.findall(r"(?<![\w/.-])([a-z][a-z0-9]*\.[A-Za-z0-9_.]*[A-Za-z0-9_])(?![\w/-])", text):
            prefix, _, rest = name.partition(".")
            if prefix not in self.prefixes or rest.rsplit(".", 1)[-1] in FILE_SUFFIXES:
                continue
            if name not in self.concrete and not any(t.match(name) for t in self.templates):
                yield name, "names no ctest test"

    # -- one piece of code text
    def code(self, text, inline):
        problems = list(self.commands(text)) + list(self.cmake(text))
        if inline:
            problems += list(self.paths(text))
        if re.search(r"(?:^|\s)ctest\b", text):
            problems += list(self.ctest(text))
        if inline and len(text.split()) == 1:
            problems += list(self.test_names(text))
        return problems


def doc_files(root):
    files = subprocess.run(["git", "-C", root, "ls-files", "*.md", "packaging/man/*"], capture_output=True,
                           text=True, check=True).stdout.split()
    return [f for f in files if not f.startswith(("tests/golden/", "fixtures/"))]


def pieces(path, text):
    """(line number, code text, inline?) of a doc: Markdown's backticks and fences, a man page's lines
    that start with a program's name."""
    if path.startswith("packaging/man/") or not path.endswith(".md"):
        for number, line in enumerate(text.splitlines(), 1):
            line = re.sub(r"\\f[BIRP]", "", line).replace("\\-", "-").replace("\\(em", "-").strip()
            if line.split(" ", 1)[0] in PROGRAMS:
                yield number, line, False
        return
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        marker = re.match(r"\s*(```+|~~~+)", line)
        if marker:
            fence = None if fence and marker.group(1).startswith(fence) else (fence or marker.group(1))
            continue
        if fence:
            command = re.sub(r"^\s*(?:\$|#|sudo)\s+", "", line)
            command = re.sub(r"\s#\s.*$", "", command)
            yield number, command, False
            continue
        for match in TICKED.finditer(line):
            yield number, match.group(1), True


def main(argv):
    root = "."
    if argv[:1] == ["--root"]:
        root, argv = argv[1], argv[2:]
    checker = Checker(Truth(root))
    misses = 0
    for path in argv or doc_files(root):
        text = read(root, path) if not os.path.isabs(path) else read("/", path)
        for number, code, inline in pieces(path, text):
            for name, why in checker.code(code, inline):
                print(f"{path}:{number}: `{name}` {why}", file=sys.stderr)
                misses += 1
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
