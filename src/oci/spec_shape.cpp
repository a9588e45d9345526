#include "oci/spec_shape.hpp"

namespace gpuctk::oci {

namespace {

using Kind = JsonShape::Kind;

constexpr JsonShape object(std::span<const JsonField> fields) {
  return {Kind::object, fields, nullptr};
}
constexpr JsonShape array_of(const JsonShape& element) {
  return {Kind::array, {}, &element};
}
constexpr JsonShape map_of(const JsonShape& element) {
  return {Kind::map, {}, &element};
}

// One table per Go struct of runtime-spec 1.3.0 (specs-go/config.go, state.go): its JSON field names in the
// order of the Go source, and where the value is a struct, a slice of structs or a map of structs, its shape.
// Fields without a shape are scalars, string lists, string maps (annotations, sysctl, unified) or
// interface{} (windows.credentialSpec). Each comment names the Go type and where it sits in config.json.
// Leaves come first: a table refers only to tables above it.

// Box: process.consoleSize
constexpr JsonField k_box_fields[] = {{"height"}, {"width"}};
constexpr JsonShape k_box = object(k_box_fields);
// User: process.user
constexpr JsonField k_user_fields[] = {{"uid"}, {"gid"}, {"umask"}, {"additionalGids"}, {"username"}};
constexpr JsonShape k_user = object(k_user_fields);
// LinuxCapabilities: process.capabilities
constexpr JsonField k_linux_capabilities_fields[] = {
    {"bounding"}, {"effective"}, {"inheritable"}, {"permitted"}, {"ambient"}};
constexpr JsonShape k_linux_capabilities = object(k_linux_capabilities_fields);
// POSIXRlimit: process.rlimits[]
constexpr JsonField k_posix_rlimit_fields[] = {{"type"}, {"hard"}, {"soft"}};
constexpr JsonShape k_posix_rlimit = object(k_posix_rlimit_fields);
// Scheduler: process.scheduler
constexpr JsonField k_scheduler_fields[] = {{"policy"},  {"nice"},     {"priority"}, {"flags"},
                                            {"runtime"}, {"deadline"}, {"period"}};
constexpr JsonShape k_scheduler = object(k_scheduler_fields);
// LinuxIOPriority: process.ioPriority
constexpr JsonField k_linux_io_priority_fields[] = {{"class"}, {"priority"}};
constexpr JsonShape k_linux_io_priority = object(k_linux_io_priority_fields);
// CPUAffinity: process.execCPUAffinity
constexpr JsonField k_cpu_affinity_fields[] = {{"initial"}, {"final"}};
constexpr JsonShape k_cpu_affinity = object(k_cpu_affinity_fields);
constexpr JsonShape k_posix_rlimit_list = array_of(k_posix_rlimit);
// Process: process
constexpr JsonField k_process_fields[] = {{"terminal"},
                                          {"consoleSize", &k_box},
                                          {"user", &k_user},
                                          {"args"},
                                          {"commandLine"},
                                          {"env"},
                                          {"cwd"},
                                          {"capabilities", &k_linux_capabilities},
                                          {"rlimits", &k_posix_rlimit_list},
                                          {"noNewPrivileges"},
                                          {"apparmorProfile"},
                                          {"oomScoreAdj"},
                                          {"scheduler", &k_scheduler},
                                          {"selinuxLabel"},
                                          {"ioPriority", &k_linux_io_priority},
                                          {"execCPUAffinity", &k_cpu_affinity}};
constexpr JsonShape k_process = object(k_process_fields);
// Root: root
constexpr JsonField k_root_fields[] = {{"path"}, {"readonly"}};
constexpr JsonShape k_root = object(k_root_fields);
// LinuxIDMapping: mounts[].uidMappings[], linux.uidMappings[], ...
constexpr JsonField k_linux_id_mapping_fields[] = {{"containerID"}, {"hostID"}, {"size"}};
constexpr JsonShape k_linux_id_mapping = object(k_linux_id_mapping_fields);
constexpr JsonShape k_linux_id_mapping_list = array_of(k_linux_id_mapping);
// Mount: mounts[]
constexpr JsonField k_mount_fields[] = {{"destination"},
                                        {"type"},
                                        {"source"},
                                        {"options"},
                                        {"uidMappings", &k_linux_id_mapping_list},
                                        {"gidMappings", &k_linux_id_mapping_list}};
constexpr JsonShape k_mount = object(k_mount_fields);
// Hook: hooks.<point>[]
constexpr JsonField k_hook_fields[] = {{"path"}, {"args"}, {"env"}, {"timeout"}};
constexpr JsonShape k_hook = object(k_hook_fields);
constexpr JsonShape k_hook_list = array_of(k_hook);
// Hooks: hooks
constexpr JsonField k_hooks_fields[] = {{"prestart", &k_hook_list},        {"createRuntime", &k_hook_list},
                                        {"createContainer", &k_hook_list}, {"startContainer", &k_hook_list},
                                        {"poststart", &k_hook_list},       {"poststop", &k_hook_list}};
constexpr JsonShape k_hooks = object(k_hooks_fields);
// LinuxDeviceCgroup: linux.resources.devices[]
constexpr JsonField k_linux_device_cgroup_fields[] = {{"allow"}, {"type"}, {"major"}, {"minor"}, {"access"}};
constexpr JsonShape k_linux_device_cgroup = object(k_linux_device_cgroup_fields);
// LinuxMemory: linux.resources.memory
constexpr JsonField k_linux_memory_fields[] = {
    {"limit"},      {"reservation"},      {"swap"},         {"kernel"},           {"kernelTCP"},
    {"swappiness"}, {"disableOOMKiller"}, {"useHierarchy"}, {"checkBeforeUpdate"}};
constexpr JsonShape k_linux_memory = object(k_linux_memory_fields);
// LinuxCPU: linux.resources.cpu
constexpr JsonField k_linux_cpu_fields[] = {
    {"shares"},         {"quota"}, {"burst"}, {"period"}, {"realtimeRuntime"},
    {"realtimePeriod"}, {"cpus"},  {"mems"},  {"idle"}};
constexpr JsonShape k_linux_cpu = object(k_linux_cpu_fields);
// LinuxPids: linux.resources.pids
constexpr JsonField k_linux_pids_fields[] = {{"limit"}};
constexpr JsonShape k_linux_pids = object(k_linux_pids_fields);
// LinuxWeightDevice: linux.resources.blockIO.weightDevice[] (major, minor: embedded LinuxBlockIODevice)
constexpr JsonField k_linux_weight_device_fields[] = {{"major"}, {"minor"}, {"weight"}, {"leafWeight"}};
constexpr JsonShape k_linux_weight_device = object(k_linux_weight_device_fields);
// LinuxThrottleDevice: linux.resources.blockIO.throttle*Device[] (major, minor: embedded LinuxBlockIODevice)
constexpr JsonField k_linux_throttle_device_fields[] = {{"major"}, {"minor"}, {"rate"}};
constexpr JsonShape k_linux_throttle_device = object(k_linux_throttle_device_fields);
constexpr JsonShape k_linux_weight_device_list = array_of(k_linux_weight_device);
constexpr JsonShape k_linux_throttle_device_list = array_of(k_linux_throttle_device);
// LinuxBlockIO: linux.resources.blockIO
constexpr JsonField k_linux_block_io_fields[] = {{"weight"},
                                                 {"leafWeight"},
                                                 {"weightDevice", &k_linux_weight_device_list},
                                                 {"throttleReadBpsDevice", &k_linux_throttle_device_list},
                                                 {"throttleWriteBpsDevice", &k_linux_throttle_device_list},
                                                 {"throttleReadIOPSDevice", &k_linux_throttle_device_list},
                                                 {"throttleWriteIOPSDevice", &k_linux_throttle_device_list}};
constexpr JsonShape k_linux_block_io = object(k_linux_block_io_fields);
// LinuxHugepageLimit: linux.resources.hugepageLimits[]
constexpr JsonField k_linux_hugepage_limit_fields[] = {{"pageSize"}, {"limit"}};
constexpr JsonShape k_linux_hugepage_limit = object(k_linux_hugepage_limit_fields);
// LinuxInterfacePriority: linux.resources.network.priorities[]
constexpr JsonField k_linux_interface_priority_fields[] = {{"name"}, {"priority"}};
constexpr JsonShape k_linux_interface_priority = object(k_linux_interface_priority_fields);
constexpr JsonShape k_linux_interface_priority_list = array_of(k_linux_interface_priority);
// LinuxNetwork: linux.resources.network
constexpr JsonField k_linux_network_fields[] = {{"classID"},
                                                {"priorities", &k_linux_interface_priority_list}};
constexpr JsonShape k_linux_network = object(k_linux_network_fields);
// LinuxRdma: linux.resources.rdma.<device>
constexpr JsonField k_linux_rdma_fields[] = {{"hcaHandles"}, {"hcaObjects"}};
constexpr JsonShape k_linux_rdma = object(k_linux_rdma_fields);
constexpr JsonShape k_linux_device_cgroup_list = array_of(k_linux_device_cgroup);
constexpr JsonShape k_linux_hugepage_limit_list = array_of(k_linux_hugepage_limit);
constexpr JsonShape k_linux_rdma_map = map_of(k_linux_rdma);
// LinuxResources: linux.resources
constexpr JsonField k_linux_resources_fields[] = {{"devices", &k_linux_device_cgroup_list},
                                                  {"memory", &k_linux_memory},
                                                  {"cpu", &k_linux_cpu},
                                                  {"pids", &k_linux_pids},
                                                  {"blockIO", &k_linux_block_io},
                                                  {"hugepageLimits", &k_linux_hugepage_limit_list},
                                                  {"network", &k_linux_network},
                                                  {"rdma", &k_linux_rdma_map},
                                                  {"unified"}};
constexpr JsonShape k_linux_resources = object(k_linux_resources_fields);
// LinuxNamespace: linux.namespaces[]
constexpr JsonField k_linux_namespace_fields[] = {{"type"}, {"path"}};
constexpr JsonShape k_linux_namespace = object(k_linux_namespace_fields);
// LinuxDevice: linux.devices[]
constexpr JsonField k_linux_device_fields[] = {{"path"},     {"type"}, {"major"}, {"minor"},
                                               {"fileMode"}, {"uid"},  {"gid"}};
constexpr JsonShape k_linux_device = object(k_linux_device_fields);
// LinuxNetDevice: linux.netDevices.<name>
constexpr JsonField k_linux_net_device_fields[] = {{"name"}};
constexpr JsonShape k_linux_net_device = object(k_linux_net_device_fields);
// LinuxSeccompArg: linux.seccomp.syscalls[].args[]
constexpr JsonField k_linux_seccomp_arg_fields[] = {{"index"}, {"value"}, {"valueTwo"}, {"op"}};
constexpr JsonShape k_linux_seccomp_arg = object(k_linux_seccomp_arg_fields);
constexpr JsonShape k_linux_seccomp_arg_list = array_of(k_linux_seccomp_arg);
// LinuxSyscall: linux.seccomp.syscalls[]
constexpr JsonField k_linux_syscall_fields[] = {
    {"names"}, {"action"}, {"errnoRet"}, {"args", &k_linux_seccomp_arg_list}};
constexpr JsonShape k_linux_syscall = object(k_linux_syscall_fields);
constexpr JsonShape k_linux_syscall_list = array_of(k_linux_syscall);
// LinuxSeccomp: linux.seccomp
constexpr JsonField k_linux_seccomp_fields[] = {{"defaultAction"},
                                                {"defaultErrnoRet"},
                                                {"architectures"},
                                                {"flags"},
                                                {"listenerPath"},
                                                {"listenerMetadata"},
                                                {"syscalls", &k_linux_syscall_list}};
constexpr JsonShape k_linux_seccomp = object(k_linux_seccomp_fields);
// LinuxIntelRdt: linux.intelRdt
constexpr JsonField k_linux_intel_rdt_fields[] = {
    {"closID"}, {"schemata"}, {"l3CacheSchema"}, {"memBwSchema"}, {"enableMonitoring"}};
constexpr JsonShape k_linux_intel_rdt = object(k_linux_intel_rdt_fields);
// LinuxMemoryPolicy: linux.memoryPolicy
constexpr JsonField k_linux_memory_policy_fields[] = {{"mode"}, {"nodes"}, {"flags"}};
constexpr JsonShape k_linux_memory_policy = object(k_linux_memory_policy_fields);
// LinuxPersonality: linux.personality
constexpr JsonField k_linux_personality_fields[] = {{"domain"}, {"flags"}};
constexpr JsonShape k_linux_personality = object(k_linux_personality_fields);
// LinuxTimeOffset: linux.timeOffsets.<clock>
constexpr JsonField k_linux_time_offset_fields[] = {{"secs"}, {"nanosecs"}};
constexpr JsonShape k_linux_time_offset = object(k_linux_time_offset_fields);
constexpr JsonShape k_linux_namespace_list = array_of(k_linux_namespace);
constexpr JsonShape k_linux_device_list = array_of(k_linux_device);
constexpr JsonShape k_linux_net_device_map = map_of(k_linux_net_device);
constexpr JsonShape k_linux_time_offset_map = map_of(k_linux_time_offset);
// Linux: linux
constexpr JsonField k_linux_fields[] = {{"uidMappings", &k_linux_id_mapping_list},
                                        {"gidMappings", &k_linux_id_mapping_list},
                                        {"sysctl"},
                                        {"resources", &k_linux_resources},
                                        {"cgroupsPath"},
                                        {"namespaces", &k_linux_namespace_list},
                                        {"devices", &k_linux_device_list},
                                        {"netDevices", &k_linux_net_device_map},
                                        {"seccomp", &k_linux_seccomp},
                                        {"rootfsPropagation"},
                                        {"maskedPaths"},
                                        {"readonlyPaths"},
                                        {"mountLabel"},
                                        {"intelRdt", &k_linux_intel_rdt},
                                        {"memoryPolicy", &k_linux_memory_policy},
                                        {"personality", &k_linux_personality},
                                        {"timeOffsets", &k_linux_time_offset_map}};
constexpr JsonShape k_linux = object(k_linux_fields);
// SolarisCappedCPU: solaris.cappedCPU
constexpr JsonField k_solaris_capped_cpu_fields[] = {{"ncpus"}};
constexpr JsonShape k_solaris_capped_cpu = object(k_solaris_capped_cpu_fields);
// SolarisCappedMemory: solaris.cappedMemory
constexpr JsonField k_solaris_capped_memory_fields[] = {{"physical"}, {"swap"}};
constexpr JsonShape k_solaris_capped_memory = object(k_solaris_capped_memory_fields);
// SolarisAnet: solaris.anet[]
constexpr JsonField k_solaris_anet_fields[] = {
    {"linkname"},  {"lowerLink"},      {"allowedAddress"}, {"configureAllowedAddress"},
    {"defrouter"}, {"linkProtection"}, {"macAddress"}};
constexpr JsonShape k_solaris_anet = object(k_solaris_anet_fields);
constexpr JsonShape k_solaris_anet_list = array_of(k_solaris_anet);
// Solaris: solaris
constexpr JsonField k_solaris_fields[] = {{"milestone"},
                                          {"limitpriv"},
                                          {"maxShmMemory"},
                                          {"anet", &k_solaris_anet_list},
                                          {"cappedCPU", &k_solaris_capped_cpu},
                                          {"cappedMemory", &k_solaris_capped_memory}};
constexpr JsonShape k_solaris = object(k_solaris_fields);
// WindowsDevice: windows.devices[]
constexpr JsonField k_windows_device_fields[] = {{"id"}, {"idType"}};
constexpr JsonShape k_windows_device = object(k_windows_device_fields);
// WindowsMemoryResources: windows.resources.memory
constexpr JsonField k_windows_memory_resources_fields[] = {{"limit"}};
constexpr JsonShape k_windows_memory_resources = object(k_windows_memory_resources_fields);
// WindowsCPUGroupAffinity: windows.resources.cpu.affinity[]
constexpr JsonField k_windows_cpu_group_affinity_fields[] = {{"mask"}, {"group"}};
constexpr JsonShape k_windows_cpu_group_affinity = object(k_windows_cpu_group_affinity_fields);
constexpr JsonShape k_windows_cpu_group_affinity_list = array_of(k_windows_cpu_group_affinity);
// WindowsCPUResources: windows.resources.cpu
constexpr JsonField k_windows_cpu_resources_fields[] = {
    {"count"}, {"shares"}, {"maximum"}, {"affinity", &k_windows_cpu_group_affinity_list}};
constexpr JsonShape k_windows_cpu_resources = object(k_windows_cpu_resources_fields);
// WindowsStorageResources: windows.resources.storage
constexpr JsonField k_windows_storage_resources_fields[] = {{"iops"}, {"bps"}, {"sandboxSize"}};
constexpr JsonShape k_windows_storage_resources = object(k_windows_storage_resources_fields);
// WindowsResources: windows.resources
constexpr JsonField k_windows_resources_fields[] = {{"memory", &k_windows_memory_resources},
                                                    {"cpu", &k_windows_cpu_resources},
                                                    {"storage", &k_windows_storage_resources}};
constexpr JsonShape k_windows_resources = object(k_windows_resources_fields);
// WindowsHyperV: windows.hyperv
constexpr JsonField k_windows_hyper_v_fields[] = {{"utilityVMPath"}};
constexpr JsonShape k_windows_hyper_v = object(k_windows_hyper_v_fields);
// WindowsNetwork: windows.network
constexpr JsonField k_windows_network_fields[] = {{"endpointList"},
                                                  {"allowUnqualifiedDNSQuery"},
                                                  {"DNSSearchList"},
                                                  {"networkSharedContainerName"},
                                                  {"networkNamespace"}};
constexpr JsonShape k_windows_network = object(k_windows_network_fields);
constexpr JsonShape k_windows_device_list = array_of(k_windows_device);
// Windows: windows (credentialSpec is an interface{}: not checked)
constexpr JsonField k_windows_fields[] = {{"layerFolders"},
                                          {"devices", &k_windows_device_list},
                                          {"resources", &k_windows_resources},
                                          {"credentialSpec"},
                                          {"servicing"},
                                          {"ignoreFlushesDuringBoot"},
                                          {"hyperv", &k_windows_hyper_v},
                                          {"network", &k_windows_network}};
constexpr JsonShape k_windows = object(k_windows_fields);
// VMHypervisor: vm.hypervisor
constexpr JsonField k_vm_hypervisor_fields[] = {{"path"}, {"parameters"}};
constexpr JsonShape k_vm_hypervisor = object(k_vm_hypervisor_fields);
// VMKernel: vm.kernel
constexpr JsonField k_vm_kernel_fields[] = {{"path"}, {"parameters"}, {"initrd"}};
constexpr JsonShape k_vm_kernel = object(k_vm_kernel_fields);
// VMImage: vm.image
constexpr JsonField k_vm_image_fields[] = {{"path"}, {"format"}};
constexpr JsonShape k_vm_image = object(k_vm_image_fields);
// IOMems: vm.hwconfig.iomems[]
constexpr JsonField k_io_mems_fields[] = {{"firstGFN"}, {"firstMFN"}, {"nrMFNs"}};
constexpr JsonShape k_io_mems = object(k_io_mems_fields);
constexpr JsonShape k_io_mems_list = array_of(k_io_mems);
// HWConfig: vm.hwconfig
constexpr JsonField k_hw_config_fields[] = {
    {"deviceTree"}, {"vcpus"}, {"memory"}, {"dtdevs"}, {"iomems", &k_io_mems_list}, {"irqs"}};
constexpr JsonShape k_hw_config = object(k_hw_config_fields);
// VM: vm
constexpr JsonField k_vm_fields[] = {{"hypervisor", &k_vm_hypervisor},
                                     {"kernel", &k_vm_kernel},
                                     {"image", &k_vm_image},
                                     {"hwconfig", &k_hw_config}};
constexpr JsonShape k_vm = object(k_vm_fields);
// ZOSNamespace: zos.namespaces[]
constexpr JsonField k_zos_namespace_fields[] = {{"type"}, {"path"}};
constexpr JsonShape k_zos_namespace = object(k_zos_namespace_fields);
constexpr JsonShape k_zos_namespace_list = array_of(k_zos_namespace);
// ZOS: zos
constexpr JsonField k_zos_fields[] = {{"namespaces", &k_zos_namespace_list}};
constexpr JsonShape k_zos = object(k_zos_fields);
// FreeBSDDevice: freebsd.devices[]
constexpr JsonField k_free_bsd_device_fields[] = {{"path"}, {"mode"}};
constexpr JsonShape k_free_bsd_device = object(k_free_bsd_device_fields);
// FreeBSDJailAllow: freebsd.jail.allow
constexpr JsonField k_free_bsd_jail_allow_fields[] = {{"setHostname"}, {"rawSockets"},    {"chflags"},
                                                      {"mount"},       {"quotas"},        {"socketAf"},
                                                      {"mlock"},       {"reservedPorts"}, {"suser"}};
constexpr JsonShape k_free_bsd_jail_allow = object(k_free_bsd_jail_allow_fields);
// FreeBSDJail: freebsd.jail
constexpr JsonField k_free_bsd_jail_fields[] = {{"parent"},
                                                {"host"},
                                                {"ip4"},
                                                {"ip4Addr"},
                                                {"ip6"},
                                                {"ip6Addr"},
                                                {"vnet"},
                                                {"interface"},
                                                {"vnetInterfaces"},
                                                {"sysvmsg"},
                                                {"sysvsem"},
                                                {"sysvshm"},
                                                {"enforceStatfs"},
                                                {"allow", &k_free_bsd_jail_allow}};
constexpr JsonShape k_free_bsd_jail = object(k_free_bsd_jail_fields);
constexpr JsonShape k_free_bsd_device_list = array_of(k_free_bsd_device);
// FreeBSD: freebsd
constexpr JsonField k_free_bsd_fields[] = {{"devices", &k_free_bsd_device_list}, {"jail", &k_free_bsd_jail}};
constexpr JsonShape k_free_bsd = object(k_free_bsd_fields);
constexpr JsonShape k_mount_list = array_of(k_mount);
// Spec: the document of config.json (annotations: map[string]string)
constexpr JsonField k_spec_fields[] = {
    {"ociVersion"},      {"process", &k_process},   {"root", &k_root},       {"hostname"},
    {"domainname"},      {"mounts", &k_mount_list}, {"hooks", &k_hooks},     {"annotations"},
    {"linux", &k_linux}, {"solaris", &k_solaris},   {"windows", &k_windows}, {"vm", &k_vm},
    {"zos", &k_zos},     {"freebsd", &k_free_bsd}};
constexpr JsonShape k_spec = object(k_spec_fields);
// State: the state on a hook's stdin (state.go)
constexpr JsonField k_state_fields[] = {{"ociVersion"}, {"id"},     {"status"},
                                        {"pid"},        {"bundle"}, {"annotations"}};
constexpr JsonShape k_state = object(k_state_fields);

}  // namespace

const JsonShape& config_shape() {
  return k_spec;
}

const JsonShape& state_shape() {
  return k_state;
}

}  // namespace gpuctk::oci
