// gpuctk runtime configure: makes gpuctk's runtime shim (gpuctk-runtime) a named runtime of containerd,
// CRI-O or docker by editing the engine's config file (engine/configure.hpp does the work, keeps a backup
// and undoes it with --remove). A row of the command table under `gpuctk runtime` (cli/app.cpp), which
// hands its arguments to runc: runc has no `configure` command, so the word is free there as the first
// argument (anywhere later it is runc's); the shim's own name, gpuctk-runtime, never configures anything.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "cli/commands.hpp"
#include "engine/configure.hpp"
#include "install/docker_hook.hpp"
#include "util/path.hpp"
#include "util/strings.hpp"

namespace gpuctk::cli {

namespace {

// Where `cmake --install` puts the shim: the gpuctk-runtime link beside the installed gpuctk.
std::string installed_runtime_path() {
  const std::string_view binary = GPUCTK_INSTALLED_BINARY;
  return std::string(binary.substr(0, binary.rfind('/') + 1)) + "gpuctk-runtime";
}

// docker --gpus: the link named nvidia-container-runtime-hook (install/docker_hook.hpp) goes to `dir`;
// its target is the gpuctk beside the shim (gpuctk-runtime is always a link beside gpuctk). "none": no
// link. Returns "" for no link: --docker-hook-dir none, or no --docker-hook-dir with a --config other
// than docker's default (a dockerd of its own, whose PATH gpuctk cannot know).
std::string docker_hook_link(const std::string& dir, bool dir_given, const std::string& config) {
  if (dir == "none" ||
      (!dir_given && !config.empty() && config != engine::default_config_path(engine::Engine::docker))) {
    return "";
  }
  return clean_path(dir + "/" + std::string(install::k_docker_hook_name));
}

std::string gpuctk_beside(const std::string& runtime_path) {
  return runtime_path.substr(0, runtime_path.rfind('/') + 1) + "gpuctk";
}

Result<void> check_docker_hook_dir(std::string_view dir) {
  if (dir != "none" && !dir.starts_with('/')) {
    return fail(quote(dir) + " is not an absolute path (or none)");
  }
  return {};
}

Result<void> check_containerd_version(std::string_view text) {
  if (text != "2" && text != "3") {
    return fail(quote(text) + " is not a containerd config version gpuctk writes (want 2 or 3)");
  }
  return {};
}

Result<void> check_drop_in_path(std::string_view path) {
  if (!path.empty() && (!path.starts_with('/') || !is_clean_path(path))) {
    return fail(quote(path) + " is not a clean absolute path");
  }
  return {};
}

// What the command line gave, parsed by CLI11 into these.
struct Options {
  std::string runtime;
  std::string config;
  std::string docker_hook_dir{install::k_default_docker_hook_dir};
  engine::RuntimeSettings settings;
  bool dry_run = false;
  bool remove = false;
  CLI::Option* runtime_option = nullptr;
  CLI::Option* hook_dir = nullptr;
  CLI::Option* version = nullptr;
  CLI::Option* drop_in = nullptr;
  CLI::Option* source_option = nullptr;
  CLI::Option* executable_option = nullptr;
};

int run_configure(Options& o, const CLI::App& command) {
  // nvidia-ctk's default engine; said on stderr, since an operator of containerd may have forgotten it.
  if (o.runtime_option->count() == 0) {
    o.runtime = "docker";
    note("no --runtime given: configuring docker (as nvidia-ctk does)");
  }
  const engine::Engine which = *engine::parse_engine(o.runtime);
  if (o.hook_dir->count() != 0 && which != engine::Engine::docker) {
    return usage_error(command, "--docker-hook-dir is for --runtime docker only");
  }
  if (o.version->count() != 0 && which != engine::Engine::containerd) {
    return usage_error(command, "--containerd-config-version is for --runtime containerd only");
  }
  if (!o.settings.drop_in.empty() && which != engine::Engine::containerd) {
    return usage_error(command, "--drop-in-config is for --runtime containerd only");
  }
  if (which == engine::Engine::docker &&
      (o.source_option->count() != 0 || o.executable_option->count() != 0)) {
    // nvidia-ctk ignores them for docker, whose config is daemon.json alone.
    warn("--config-source and --executable-path are ignored for docker (daemon.json is its whole config)");
    o.settings.config_source = engine::ConfigSource::file;
  }
  if (which == engine::Engine::crio && o.settings.config_source == engine::ConfigSource::command) {
    return usage_error(command,
                       "--config-source command is for --runtime containerd (gpuctk reads CRI-O's files "
                       "in CRI-O's order)");
  }
  const std::string path = o.config.empty() ? engine::default_config_path(which) : o.config;
  // containerd: a drop-in beside config.toml unless --drop-in-config says otherwise ("": none).
  if (which == engine::Engine::containerd && o.drop_in->count() == 0) {
    o.settings.drop_in = engine::default_drop_in_path(path);
    o.settings.drop_in_choice = engine::DropIn::by_default;
  }
  if (o.settings.config_source == engine::ConfigSource::command && o.settings.drop_in.empty()) {
    return usage_error(command, "--config-source command needs a drop-in (not --drop-in-config \"\")");
  }

  const auto result = o.remove ? engine::unconfigure(which, path, o.settings, o.dry_run)
                               : engine::configure(which, path, o.settings, o.dry_run);
  if (!result) {
    return report(result.error());
  }
  // Configuring before the shim is installed is fine (an installer may do it in either order), but the
  // engine will fail every container of that runtime until it is there.
  if (!o.remove && ::access(o.settings.runtime_path.c_str(), X_OK) != 0) {
    const std::string why = std::strerror(errno);
    warn("runtime path " + o.settings.runtime_path + ": " + why + " (the engine cannot run runtime " +
         quote(o.settings.name) + " until it is there)");
  }
  std::string summary = result->summary;
  if (const std::string link = docker_hook_link(o.docker_hook_dir, o.hook_dir->count() != 0, o.config);
      which == engine::Engine::docker && !link.empty()) {
    const std::string target = gpuctk_beside(o.settings.runtime_path);
    const auto hook = o.remove ? install::unlink_docker_hook(link, target, o.dry_run)
                               : install::link_docker_hook(link, target, o.dry_run);
    if (!hook) {
      return report(hook.error());
    }
    if (!hook->line.empty()) {
      summary += "\n" + hook->line;
    }
  }
  // With --dry-run stdout is the file alone; the lines about it go to stderr.
  const auto written = o.dry_run ? write_stdout(result->text) : write_stdout(summary + "\n");
  if (!written) {
    return report(written.error());
  }
  if (o.dry_run) {
    for (const auto line : split(summary, '\n')) {
      std::fprintf(stderr, "%s\n", escape_for_log(line).c_str());
    }
  }
  return k_exit_ok;
}

}  // namespace

Action define_runtime_configure(CLI::App& command) {
  // A subcommand of `gpuctk runtime` inherits its prefix_command (which takes every argument) and its
  // footer: this command has a command line of its own.
  command.prefix_command(false);
  command.allow_extras(false);
  command.footer(
      "The first change keeps the file's original beside it (<file>.gpuctk-backup); --remove puts it back "
      "when nobody else changed the file since, else undoes gpuctk's keys one by one, giving back what they "
      "replaced (<file>.gpuctk-replaced). A file that changes is printed again: TOML comments are not kept.");
  auto o = std::make_shared<Options>();
  o->settings.runtime_path = installed_runtime_path();
  o->runtime_option =
      command
          .add_option("--runtime", o->runtime,
                      "The engine: containerd, crio or docker (default: docker, as nvidia-ctk)")
          ->type_name("ENGINE")
          ->check(value_check(engine::parse_engine));
  command
      .add_option("--config", o->config,
                  "The engine's config file (default /etc/containerd/config.toml, "
                  "/etc/crio/crio.conf.d/99-gpuctk.conf, /etc/docker/daemon.json)")
      ->type_name("FILE");
  command
      .add_option("--runtime-name,--nvidia-runtime-name", o->settings.name,
                  "The runtime's name: a Kubernetes RuntimeClass handler, `docker run --runtime NAME`")
      ->type_name("NAME")
      ->capture_default_str()
      ->check(value_check(engine::check_runtime_name));
  command
      .add_option("--runtime-path,--nvidia-runtime-path", o->settings.runtime_path,
                  "The shim the engine runs as its runc (gpuctk-runtime, a link beside gpuctk)")
      ->type_name("PATH")
      ->capture_default_str()
      ->check(value_check(engine::check_runtime_path));
  CLI::Option* as_default =
      command.add_flag("--set-as-default,--nvidia-set-as-default", o->settings.set_as_default,
                       "Make it the engine's default runtime too");
  CLI::Option* cdi =
      command.add_flag("--cdi,--cdi.enabled,--cdi.enable,--enable-cdi", o->settings.enable_cdi,
                       "Turn on the engine's CDI support (containerd >= 1.7, docker >= 25; CRI-O "
                       "has it on already)");
  o->version = command
                   .add_option("--containerd-config-version", o->settings.containerd_version,
                               "The schema of a new containerd file: 2 (containerd 1.x) or 3 (2.x)")
                   ->type_name("N")
                   ->capture_default_str()
                   ->check(value_check(check_containerd_version));
  o->hook_dir =
      command
          .add_option(
              "--docker-hook-dir", o->docker_hook_dir,
              "docker: where `docker run --gpus` finds gpuctk, a directory on dockerd's PATH that gets the "
              "link nvidia-container-runtime-hook to the gpuctk beside --runtime-path (default with "
              "docker's default --config: /usr/local/bin; with another --config: none), or none")
          ->type_name("DIR")
          ->check(value_check(check_docker_hook_dir));
  o->drop_in =
      command
          .add_option("--drop-in-config", o->settings.drop_in,
                      "containerd: the drop-in file (absolute) the runtime goes to, which the config's "
                      "`imports` then name (default: conf.d/" +
                          std::string(engine::k_drop_in_name) +
                          " beside the config; with a schema-1 config, the config itself); \"\": the "
                          "config itself, as before; --remove takes the same value")
          ->type_name("FILE")
          ->check(value_check(check_drop_in_path));
  o->source_option =
      command
          .add_option_function<std::string>(
              "--config-source",
              [o](const std::string& text) {
                o->settings.config_source = *engine::parse_config_source(text);
              },
              "containerd: where a new drop-in's CRI table comes from: file (config.toml and its imports, "
              "read as containerd reads them) or command (`containerd --config FILE config dump`, run "
              "from --executable-path)")
          ->type_name("SOURCE")
          ->default_str("file")
          ->check(value_check(engine::parse_config_source));
  o->executable_option =
      command
          .add_option("--executable-path", o->settings.executable_path,
                      "containerd: the containerd that --config-source command runs (default: containerd "
                      "on PATH)")
          ->type_name("PATH");
  command.add_flag("--dry-run", o->dry_run, "Print the resulting file on stdout and write nothing");
  command.add_flag("--remove", o->remove, "Undo: restore the original, or remove gpuctk's runtime")
      ->excludes(as_default)
      ->excludes(cdi)
      ->excludes(o->version)
      ->excludes(o->source_option)
      ->excludes(o->executable_option);

  return [o, &command] { return run_configure(*o, command); };
}

}  // namespace gpuctk::cli
