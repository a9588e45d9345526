#!/usr/bin/env python3
"""scripts/doc_refs.py on a small tree of its own: each rule fails on a doc that names what the tree does
not have, with its line, and the same doc naming what it has passes.
    python3 tests/scripts/doc_refs_test.py SCRIPT     (ctest: scripts.doc_refs)
"""
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

SCRIPT = ""

TREE = {
    "src/cli/app.cpp": """
        constexpr GroupRow k_groups[] = {
            {"cdi", "Container Device Interface specs"},
            {"hook",
             "OCI hooks"},
        };
        const CommandRow k_commands[] = {
            {"cdi", "generate", "Write a spec", define_cdi_generate},
            {"", "runtime", "The shim", define_runtime},
            {"runtime", "configure", "Make the shim a runtime", define_runtime_configure},
            {"", "info", "Show what discovery finds", define_info},
        };
        app.add_flag("--debug,-d", debug, "x");
    """,
    "src/cli/cdi_generate.cpp": """
        command.add_option("--output,-o", args->output, "Spec file");
        command
            .add_option(
                "--device-ids", args->ids, "x");
        command.add_flag("--compat32,!--no-compat32", libraries32, "x");
        // "--in-a-comment" is no option
    """,
    "src/cdi/hook_args.hpp": """
        inline constexpr std::string_view k_hook_create_symlinks = "create-symlinks";
        inline constexpr std::string_view k_opt_link = "--link";
    """,
    "src/steps/commands.cpp": """
        constexpr HookRow k_hooks[] = {
            {cdi::k_hook_create_symlinks.data(), "createContainer hook", "", k_options, prepare},
            {"chmod", "createContainer hook", "", k_chmod_options, prepare_chmod},
        };
    """,
    "src/plugin/config.cpp": """
        static const std::vector<Flag> table = {
            {{"mig-strategy"}, {"MIG_STRATEGY"}, Kind::text, "none | single | mixed"},
            {{"driver-root", "nvidia-driver-root"},
             {"NVIDIA_DRIVER_ROOT"}, Kind::text, "x"},
        };
    """,
    "src/plugin/mps_daemon.cpp": 'constexpr std::string_view k_binary_flag = "--mps-control-binary";\n',
    "src/metrics/exporter_main.cpp": """
        app.add_option("-a,--address", options.address, "x");
        append_metric(out, "gpuctk_exporter_up", "gauge", "x");
    """,
    "CMakeLists.txt": """
        option(GPUCTK_BENCH "Build the benchmarks" ON)
        set(GPUCTK_UNIT_SHARDS 0 CACHE STRING "x")
        add_library(gpuctk_core STATIC)
        add_executable(gpuctk-fixture main.cpp)
        # option(GPUCTK_IN_A_COMMENT "no option" ON)
    """,
    "tests/CMakeLists.txt": """
        function(gpuctk_e2e_test name script)
          add_test(NAME e2e.${name}
            COMMAND bash ${script})
        endfunction()
        gpuctk_e2e_test(prestart_runc prestart_runc.sh)
        foreach(name real_shim_runc real_cdi_podman)
          gpuctk_e2e_test(${name} ${name}.sh)
        endforeach()
        foreach(suite trixie sid)
          foreach(engine containerd docker)
            add_test(NAME e2e.engines_${engine}_${suite} COMMAND x)
          endforeach()
        endforeach()
        foreach(shard RANGE ${last})
          add_test(NAME unit.shard${shard} COMMAND x)
        endforeach()
        add_test(NAME hostile_image COMMAND x)
        set_tests_properties(hostile_image PROPERTIES LABELS "hostile-image;asan")
        set_tests_properties(e2e.engines_podman PROPERTIES LABELS engines)
    """,
    "tests/plugin/CMakeLists.txt": """
        add_test(NAME plugin.kubelet COMMAND x)
        set_tests_properties(plugin.kubelet PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS asan)
    """,
    "tests/kube/CMakeLists.txt": 'gtest_discover_tests(kube_api_test TEST_PREFIX "kube." PROPERTIES LABELS asan)\n',
    "docs/hooks.md": "# hooks\n",
    "tests/plugin/kubelet.py": "",
}

# Each rule: (what a good doc says, what a bad doc says instead, the bad doc's complaint).
CASES = {
    "path": ("see `docs/hooks.md` and `src/cli/app`", "see `docs/hoks.md`",
             "`docs/hoks.md` names no file or folder"),
    "module path": ("`cli/app.cpp`, `cdi/hook_args`, `plugin/kubelet.py`", "`cli/apps.cpp`",
                    "`cli/apps.cpp` names no file or folder of src/ or tests/"),
    "command": ("`gpuctk cdi generate --output x`", "`gpuctk cdi generat --output x`",
                "`gpuctk cdi generat` names no gpuctk command"),
    "top command": ("`gpuctk info`", "`gpuctk infos`", "`gpuctk infos` names no gpuctk command"),
    "hook command": ("`gpuctk hook create-symlinks --link a::b`", "`gpuctk hook symlinks --link a::b`",
                     "`gpuctk hook symlinks` names no gpuctk command"),
    "option": ("`gpuctk cdi generate --no-compat32 -o -`", "`gpuctk cdi generate [--no-compat3] -o -`",
               "`gpuctk … --no-compat3` names no option of gpuctk"),
    "option in a fence": ("```sh\ngpuctk cdi generate --device-ids 0   # --not-checked\n```",
                          "```sh\n$ gpuctk cdi generate --device-id 0\n```",
                          "`gpuctk … --device-id` names no option of gpuctk"),
    "commented-out option": ("`gpuctk cdi generate --output x`", "`gpuctk cdi generate --in-a-comment`",
                             "`gpuctk … --in-a-comment` names no option of gpuctk"),
    "plugin option": ("`gpuctk-device-plugin --nvidia-driver-root /run --mig-strategy mixed`",
                      "`gpuctk-device-plugin --driver-rot /run`",
                      "`gpuctk-device-plugin … --driver-rot` names no option of gpuctk-device-plugin"),
    "exporter option": ("`gpuctk-exporter -a :9400`", "`gpuctk-exporter --adress :9400`",
                        "`gpuctk-exporter … --adress` names no option of gpuctk-exporter"),
    "cmake option": ("`cmake -DGPUCTK_BENCH=OFF -DGPUCTK_UNIT_SHARDS=4 -DCMAKE_BUILD_TYPE=Release`",
                     "`cmake -DGPUCTK_IN_A_COMMENT=ON`",
                     "`-DGPUCTK_IN_A_COMMENT` names no CMake option or cache variable"),
    "cmake target": ("`cmake --build b --target gpuctk-fixture`, `gpuctk_core`, `gpuctk_exporter_up`",
                     "`cmake --build b --target gpuctk-fixtur`",
                     "`gpuctk-fixtur` names no CMake target"),
    "bare target": ("`target_sources(gpuctk_core PRIVATE …)` and `gpuctk_e2e_test`", "`gpuctk_tests`",
                    "`gpuctk_tests` names no CMake target or function"),
    "ctest -R": ("`ctest -R e2e.prestart_runc`, `ctest -R '^kube\\.'`, `ctest -R unit.shard1`",
                 "`ctest -R e2e.prestart_crun`", "`e2e.prestart_crun` matches no ctest test"),
    "ctest -L": ("`ctest --test-dir build -L hostile-image`", "`ctest -L realhost`",
                 "`realhost` matches no ctest label"),
    "test name": ("`e2e.real_shim_runc`, `e2e.engines_docker_sid`, `plugin.kubelet`, `kube.Client.Get`",
                  "`e2e.engines_podman_sid`", "`e2e.engines_podman_sid` names no ctest test"),
    "not ours": ("`nvidia-ctk cdi generate --device-id 0`, `podman run --device x`, `--whatever`, "
                 "`plugin.json`, `gpuctk runtime run --bundle b`", None, None),
}
MAN_GOOD = ".nf\ngpuctk cdi generate \\-\\-output /etc/cdi/nvidia.yaml\n.fi\n"
MAN_BAD = ".nf\n\\fBgpuctk cdi generate\\fR \\-\\-outpt /etc/cdi/nvidia.yaml\n.fi\n"


class DocRefs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.temp = tempfile.TemporaryDirectory()
        cls.root = cls.temp.name
        for path, text in TREE.items():
            os.makedirs(os.path.dirname(os.path.join(cls.root, path)), exist_ok=True)
            with open(os.path.join(cls.root, path), "w", encoding="utf-8") as f:
                f.write(textwrap.dedent(text))

    @classmethod
    def tearDownClass(cls):
        cls.temp.cleanup()

    def check(self, name, text):
        path = os.path.join(self.root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        run = subprocess.run([sys.executable, SCRIPT, "--root", self.root, name], capture_output=True,
                             text=True, check=False)
        return run.returncode, run.stderr

    def test_each_rule(self):
        for rule, (good, bad, complaint) in CASES.items():
            with self.subTest(rule=rule):
                status, errors = self.check("good.md", f"# Good\n\n{good}\n")
                self.assertEqual((status, errors), (0, ""), rule)
                if bad is None:
                    continue
                status, errors = self.check("bad.md", f"# Bad\n\n{good}\n{bad}\n")
                line = 4 + good.count("\n") + (1 if bad.startswith("```") else 0)
                self.assertEqual(status, 1, rule)
                self.assertEqual(errors, f"bad.md:{line}: {complaint}\n", rule)

    def test_man_pages(self):
        self.assertEqual(self.check("packaging/man/gpuctk-x.h2m", MAN_GOOD), (0, ""))
        self.assertEqual(self.check("packaging/man/gpuctk-x.h2m", MAN_BAD),
                         (1, "packaging/man/gpuctk-x.h2m:2: `gpuctk … --outpt` names no option of gpuctk\n"))


if __name__ == "__main__":
    SCRIPT = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=1)
