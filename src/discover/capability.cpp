#include "discover/capability.hpp"

#include <array>

#include "util/strings.hpp"

namespace gpuctk::discover {

namespace {

struct NameRow {
  std::string_view name;
  Capability capability;
};

constexpr std::array<NameRow, 7> k_names{{
    {"utility", Capability::utility},
    {"compute", Capability::compute},
    {"video", Capability::video},
    {"graphics", Capability::graphics},
    {"display", Capability::display},
    {"ngx", Capability::ngx},
    {"compat32", Capability::compat32},
}};

struct LibraryRow {
  std::string_view prefix;  // matched against the start of the file name
  Capability capability;
};

// Every driver library we know, by the capability that needs it. A library found on the host that is
// not here is still put into generated CDI specs; the hook mounts it only for NVIDIA_DRIVER_CAPABILITIES=all.
constexpr LibraryRow k_libraries[] = {
    {"libnvidia-ml.so", Capability::utility},       // NVML
    {"libnvidia-cfg.so", Capability::utility},      // GPU configuration (nvidia-smi, persistenced)
    {"libnvidia-nscq.so", Capability::utility},     // NVSwitch configuration and query (DGX)
    {"libcuda.so", Capability::compute},            // CUDA driver API
    {"libcudadebugger.so", Capability::compute},    // CUDA debugger backend (cuda-gdb)
    {"libnvidia-opencl.so", Capability::compute},   // OpenCL ICD
    {"libnvidia-gpucomp.so", Capability::compute},  // shader/kernel compiler shared by CUDA and GL (>= 545)
    {"libnvidia-ptxjitcompiler.so", Capability::compute},    // PTX JIT
    {"libnvidia-fatbinaryloader.so", Capability::compute},   // fat binary loader (drivers < 455)
    {"libnvidia-allocator.so", Capability::compute},         // GBM/EGL buffer allocator, also used by CUDA
    {"libnvidia-compiler.so", Capability::compute},          // NVVM compiler (old drivers)
    {"libnvidia-nvvm.so", Capability::compute},              // NVVM (libNVVM JIT)
    {"libnvidia-nvvm70.so", Capability::compute},            // legacy NVVM 7.0 kept for old toolkits
    {"libnvidia-pkcs11.so", Capability::compute},            // confidential computing (OpenSSL 1.1)
    {"libnvidia-pkcs11-openssl3.so", Capability::compute},   // confidential computing (OpenSSL 3)
    {"libnvidia-tileiras.so", Capability::compute},          // tile IR compiler (newest drivers)
    {"libvdpau_nvidia.so", Capability::video},               // VDPAU
    {"libnvidia-encode.so", Capability::video},              // NVENC
    {"libnvidia-opticalflow.so", Capability::video},         // optical flow
    {"libnvcuvid.so", Capability::video},                    // NVDEC / CUVID
    {"libnvidia-eglcore.so", Capability::graphics},          // EGL core
    {"libnvidia-glcore.so", Capability::graphics},           // OpenGL core
    {"libnvidia-tls.so", Capability::graphics},              // thread-local storage for GL
    {"libnvidia-glsi.so", Capability::graphics},             // OpenGL system interface
    {"libnvidia-fbc.so", Capability::graphics},              // frame buffer capture
    {"libnvidia-ifr.so", Capability::graphics},              // in-band frame readback (old drivers)
    {"libnvidia-rtcore.so", Capability::graphics},           // ray tracing core (OptiX)
    {"libnvoptix.so", Capability::graphics},                 // OptiX
    {"libGLX_nvidia.so", Capability::graphics},              // GLVND GLX vendor library
    {"libEGL_nvidia.so", Capability::graphics},              // GLVND EGL vendor library
    {"libGLESv2_nvidia.so", Capability::graphics},           // GLVND GLES 2/3 vendor library
    {"libGLESv1_CM_nvidia.so", Capability::graphics},        // GLVND GLES 1 vendor library
    {"libnvidia-glvkspirv.so", Capability::graphics},        // SPIR-V for Vulkan/GL
    {"libnvidia-cbl.so", Capability::graphics},              // Vulkan ray tracing (old drivers)
    {"libnvidia-vulkan-producer.so", Capability::graphics},  // Vulkan producer for EGLStreams
    {"libnvidia-egl-gbm.so", Capability::graphics},          // EGL external platform: GBM
    {"libnvidia-egl-wayland.so", Capability::graphics},      // EGL external platform: Wayland
    {"libnvidia-egl-wayland2.so", Capability::graphics},     // EGL external platform: Wayland (new)
    {"libnvidia-egl-xcb.so", Capability::graphics},          // EGL external platform: XCB
    {"libnvidia-egl-xlib.so", Capability::graphics},         // EGL external platform: Xlib
    {"libglxserver_nvidia.so", Capability::display},         // X.Org GLX server extension
    {"nvidia_drv.so", Capability::display},                  // X.Org display driver
    {"libnvidia-ngx.so", Capability::ngx},                   // NGX runtime
    {"libnvidia-api.so", Capability::graphics},              // NVAPI (DXVK-NVAPI, Proton)
};

struct BinaryRow {
  std::string_view name;
  Capability capability;
  bool optional;  // a separate component most hosts do not install: its absence is no warning
};

// Driver binaries worth putting in a container.
constexpr BinaryRow k_binaries[] = {
    {"nvidia-smi", Capability::utility, false},       // system management interface
    {"nvidia-debugdump", Capability::utility, true},  // crash dump collection: Debian does not package it
    {"nvidia-persistenced", Capability::utility,
     false},  // persistence daemon (client side talks to its socket)
    {"nvidia-cuda-mps-control", Capability::compute, false},  // MPS control daemon
    {"nvidia-cuda-mps-server", Capability::compute, false},   // MPS server
    {"nvidia-imex", Capability::compute, true},      // IMEX daemon: own package, multi-node NVLink only
    {"nvidia-imex-ctl", Capability::compute, true},  // IMEX control: ships with nvidia-imex
};

}  // namespace

std::string_view capability_name(Capability capability) {
  for (const auto& row : k_names) {
    if (row.capability == capability) {
      return row.name;
    }
  }
  return "unknown";
}

Result<CapabilitySet> parse_capabilities(std::string_view list) {
  CapabilitySet set;
  if (trim(list).empty()) {
    return set;
  }
  for (const auto piece : split(list, ',')) {
    const auto name = trim(piece);
    if (name == "all") {
      set = CapabilitySet::all();
      continue;
    }
    bool known = false;
    for (const auto& row : k_names) {
      if (row.name == name) {
        set.add(row.capability);
        known = true;
      }
    }
    if (!known) {
      return fail("unknown driver capability " + quote(name) +
                  " (known: utility, compute, video, graphics, display, ngx, compat32, all)");
    }
  }
  return set;
}

std::optional<Capability> library_capability(std::string_view file_name) {
  for (const auto& row : k_libraries) {
    if (file_name.starts_with(row.prefix)) {
      // "libnvidia-egl-wayland.so" must not claim "libnvidia-egl-wayland2.so...": the prefix must end the
      // name or be followed by a version dot.
      const auto rest = file_name.substr(row.prefix.size());
      if (rest.empty() || rest.front() == '.') {
        return row.capability;
      }
    }
  }
  return std::nullopt;
}

std::optional<Capability> binary_capability(std::string_view name) {
  for (const auto& row : k_binaries) {
    if (row.name == name) {
      return row.capability;
    }
  }
  return std::nullopt;
}

bool binary_is_optional(std::string_view name) {
  for (const auto& row : k_binaries) {
    if (row.name == name) {
      return row.optional;
    }
  }
  return false;
}

std::vector<std::string_view> known_binaries() {
  std::vector<std::string_view> names;
  for (const auto& row : k_binaries) {
    names.push_back(row.name);
  }
  return names;
}

}  // namespace gpuctk::discover
