/*
 * nvml_abi.h: the subset of the NVML C ABI that gpuctk uses.
 *
 * Contract:
 * - gpuctk never links libnvidia-ml. It dlopen()s libnvidia-ml.so.1 from a host's driver root and
 *   resolves each function with dlsym() into the matching `<symbol>_fn` pointer type below.
 * - Every type, value and layout here must equal NVIDIA's nvml.h bit for bit: the real library (and the
 *   mock in fixtures/mock_nvml/) writes into these structs. The static assertions at the end pin the
 *   layouts. Names are NVML's own, so the NVML documentation applies unchanged.
 * - Nothing here is a declaration of an NVML function: only function-pointer typedefs, so including this
 *   header can never create a link-time dependency on NVML.
 * - Valid C11 and C++23; no gpuctk code or namespace in here (the C mock includes it too).
 */
#ifndef GPUCTK_DISCOVER_NVML_ABI_H
#define GPUCTK_DISCOVER_NVML_ABI_H

#include <stddef.h> /* offsetof, for the layout pins at the end */

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------------
 * Return codes
 * ------------------------------------------------------------------------------------------------- */

/* Result of every NVML call. Values are fixed by the ABI; newer drivers append codes (we only name the
 * ones up to NOT_READY), so callers must treat unknown values as errors, never as success. */
typedef enum nvmlReturn_enum {
  NVML_SUCCESS = 0,                          /* The call succeeded. */
  NVML_ERROR_UNINITIALIZED = 1,              /* nvmlInit*() was not called (or NVML was shut down). */
  NVML_ERROR_INVALID_ARGUMENT = 2,           /* A NULL pointer, bad handle or out-of-range index. */
  NVML_ERROR_NOT_SUPPORTED = 3,              /* The device does not support this query. */
  NVML_ERROR_NO_PERMISSION = 4,              /* The caller lacks permission. */
  NVML_ERROR_ALREADY_INITIALIZED = 5,        /* Deprecated: init is reference counted now. */
  NVML_ERROR_NOT_FOUND = 6,                  /* A lookup (UUID, bus id, MIG slot) found nothing. */
  NVML_ERROR_INSUFFICIENT_SIZE = 7,          /* A caller's buffer is too small. */
  NVML_ERROR_INSUFFICIENT_POWER = 8,         /* External power cables are not attached properly. */
  NVML_ERROR_DRIVER_NOT_LOADED = 9,          /* The NVIDIA kernel driver is not loaded. */
  NVML_ERROR_TIMEOUT = 10,                   /* A caller-supplied timeout passed. */
  NVML_ERROR_IRQ_ISSUE = 11,                 /* The kernel driver detected an interrupt problem. */
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,         /* The NVML shared library could not be loaded. */
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,        /* This NVML build does not implement the function. */
  NVML_ERROR_CORRUPTED_INFOROM = 14,         /* The GPU's infoROM is corrupted. */
  NVML_ERROR_GPU_IS_LOST = 15,               /* The GPU fell off the bus or is otherwise gone. */
  NVML_ERROR_RESET_REQUIRED = 16,            /* The GPU needs a reset before it can be used. */
  NVML_ERROR_OPERATING_SYSTEM = 17,          /* The OS / cgroups blocked access to the GPU. */
  NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,   /* libnvidia-ml and the kernel module differ in version. */
  NVML_ERROR_IN_USE = 19,                    /* The GPU is in use, the operation cannot proceed. */
  NVML_ERROR_MEMORY = 20,                    /* Out of host memory. */
  NVML_ERROR_NO_DATA = 21,                   /* No data. */
  NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,    /* vGPU operation unavailable because ECC is enabled. */
  NVML_ERROR_INSUFFICIENT_RESOURCES = 23,    /* Out of critical resources other than memory. */
  NVML_ERROR_FREQ_NOT_SUPPORTED = 24,        /* The requested frequency is not supported. */
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25, /* A versioned struct carries an unsupported version. */
  NVML_ERROR_DEPRECATED = 26,                /* The functionality has been deprecated. */
  NVML_ERROR_NOT_READY = 27,                 /* The system is not ready for the request. */
  NVML_ERROR_UNKNOWN = 999                   /* Any other internal driver error. */
} nvmlReturn_t;

/* ---------------------------------------------------------------------------------------------------
 * Handles and constants
 * ------------------------------------------------------------------------------------------------- */

/* Opaque handle of a GPU or of a MIG device; only the library knows the pointee. */
typedef struct nvmlDevice_st* nvmlDevice_t;

/* Buffer sizes NVML guarantees to be large enough (each includes the terminating NUL). */
#define NVML_DEVICE_UUID_BUFFER_SIZE 80           /* Legacy size for GPU UUIDs. */
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96        /* nvmlDeviceGetUUID, also for MIG UUIDs. */
#define NVML_DEVICE_NAME_BUFFER_SIZE 64           /* Legacy size for device names. */
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96        /* nvmlDeviceGetName, also for MIG names. */
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80 /* nvmlSystemGetDriverVersion. */
#define NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE 80   /* nvmlSystemGetNVMLVersion. */
#define NVML_DEVICE_SERIAL_BUFFER_SIZE 30         /* nvmlDeviceGetSerial (not used yet). */
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32     /* nvmlPciInfo_t.busId. */
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16  /* nvmlPciInfo_t.busIdLegacy. */

/* printf formats NVML uses for the two bus id fields (domain, bus, device in hex). */
#define NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT "%04X:%02X:%02X.0" /* busIdLegacy: 4-digit domain. */
#define NVML_DEVICE_PCI_BUS_ID_FMT "%08X:%02X:%02X.0"        /* busId: 8-digit domain. */

/* Flags of nvmlInitWithFlags (bit set). */
#define NVML_INIT_FLAG_NO_GPUS 1   /* Don't fail init when no GPUs are found. */
#define NVML_INIT_FLAG_NO_ATTACH 2 /* Don't attach GPUs while initialising. */

/* GPU instance profiles: the `profile` argument of nvmlDeviceGetGpuInstanceProfileInfo (an index, not
 * the profile's id, which the info struct reports). */
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE 0x0         /* 1g.Ngb */
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE 0x1         /* 2g.Ngb */
#define NVML_GPU_INSTANCE_PROFILE_3_SLICE 0x2         /* 3g.Ngb */
#define NVML_GPU_INSTANCE_PROFILE_4_SLICE 0x3         /* 4g.Ngb */
#define NVML_GPU_INSTANCE_PROFILE_7_SLICE 0x4         /* 7g.Ngb */
#define NVML_GPU_INSTANCE_PROFILE_8_SLICE 0x5         /* 8g.Ngb */
#define NVML_GPU_INSTANCE_PROFILE_6_SLICE 0x6         /* 6g.Ngb */
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 0x7    /* 1g.Ngb+me: with media engines */
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1 0x8    /* 2g.Ngb+me */
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2 0x9    /* 1 slice with twice the memory (1g.20gb of 80 GB) */
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX 0xA     /* 1g.Ngb+gfx: graphics capable */
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_GFX 0xB     /* 2g.Ngb+gfx */
#define NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX 0xC     /* 4g.Ngb+gfx */
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME 0xD   /* 1g.Ngb-me: no media engines */
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME 0xE   /* 2g.Ngb-me */
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME 0xF  /* 1g.Ngb+me.all: every media engine */
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME 0x10 /* 2g.Ngb+me.all */
#define NVML_GPU_INSTANCE_PROFILE_3_SLICE_GFX 0x11    /* 3g.Ngb+gfx */
#define NVML_GPU_INSTANCE_PROFILE_COUNT 0x12          /* Indices at or past this: INVALID_ARGUMENT. */

/* Values of nvmlDeviceGetMigMode's currentMode / pendingMode. */
#define NVML_DEVICE_MIG_DISABLE 0x0 /* MIG mode off. */
#define NVML_DEVICE_MIG_ENABLE 0x1  /* MIG mode on. */

/* Links a GPU may have; nvmlDeviceGetNvLinkState and nvmlDeviceGetNvLinkRemotePciInfo_v2 take an index
 * below this (drivers before R570 said 18 and answer NVML_ERROR_INVALID_ARGUMENT past their own count). */
#define NVML_NVLINK_MAX_LINKS 36

/* Event types (a bit set) of nvmlDeviceRegisterEvents and nvmlEventData_t.eventType. Only the ones the
 * device plugin's health check registers are named. */
#define nvmlEventTypeSingleBitEccError 0x0000000000000001LL /* A corrected ECC error. */
#define nvmlEventTypeDoubleBitEccError 0x0000000000000002LL /* An uncorrected ECC error. */
#define nvmlEventTypeXidCriticalError 0x0000000000000008LL  /* An Xid error; eventData is the Xid. */

/* nvmlEventData_t's gpuInstanceId / computeInstanceId when the event is not attributable to a MIG instance.
 */
#define NVML_EVENT_INSTANCE_NONE 0xFFFFFFFFu

/* nvmlSystemGetCudaDriverVersion returns 1000 * major + 10 * minor (e.g. 12040 = CUDA 12.4). */
#define NVML_CUDA_DRIVER_VERSION_MAJOR(v) ((v) / 1000)        /* 12040 -> 12 */
#define NVML_CUDA_DRIVER_VERSION_MINOR(v) (((v) % 1000) / 10) /* 12040 -> 4 */

/* ---------------------------------------------------------------------------------------------------
 * Enumerations
 * ------------------------------------------------------------------------------------------------- */

/* Product brand of a GPU (nvmlDeviceGetBrand). */
typedef enum nvmlBrandType_enum {
  NVML_BRAND_UNKNOWN = 0,              /* Brand not known to this driver. */
  NVML_BRAND_QUADRO = 1,               /* Quadro. */
  NVML_BRAND_TESLA = 2,                /* Tesla (data-centre parts such as A100, H100). */
  NVML_BRAND_NVS = 3,                  /* NVS. */
  NVML_BRAND_GRID = 4,                 /* GRID (deprecated from reporting). */
  NVML_BRAND_GEFORCE = 5,              /* GeForce. */
  NVML_BRAND_TITAN = 6,                /* Titan. */
  NVML_BRAND_NVIDIA_VAPPS = 7,         /* NVIDIA Virtual Applications. */
  NVML_BRAND_NVIDIA_VPC = 8,           /* NVIDIA Virtual PC. */
  NVML_BRAND_NVIDIA_VCS = 9,           /* NVIDIA Virtual Compute Server. */
  NVML_BRAND_NVIDIA_VWS = 10,          /* NVIDIA RTX Virtual Workstation. */
  NVML_BRAND_NVIDIA_CLOUD_GAMING = 11, /* NVIDIA Cloud Gaming. */
  NVML_BRAND_NVIDIA_VGAMING = NVML_BRAND_NVIDIA_CLOUD_GAMING, /* Old name of CLOUD_GAMING. */
  NVML_BRAND_QUADRO_RTX = 12,                                 /* Quadro RTX. */
  NVML_BRAND_NVIDIA_RTX = 13,                                 /* NVIDIA RTX. */
  NVML_BRAND_NVIDIA = 14,      /* NVIDIA (newer data-centre parts report this). */
  NVML_BRAND_GEFORCE_RTX = 15, /* GeForce RTX (unused by current drivers). */
  NVML_BRAND_TITAN_RTX = 16,   /* Titan RTX (unused by current drivers). */
  NVML_BRAND_COUNT             /* Number of brands this header knows. */
} nvmlBrandType_t;

/* Simplified chip architecture (nvmlDeviceGetArchitecture). A plain integer in the ABI, not an enum,
 * so new architectures can appear without breaking it. */
typedef unsigned int nvmlDeviceArchitecture_t;
#define NVML_DEVICE_ARCH_KEPLER 2           /* Kepler (sm_3x). */
#define NVML_DEVICE_ARCH_MAXWELL 3          /* Maxwell (sm_5x). */
#define NVML_DEVICE_ARCH_PASCAL 4           /* Pascal (sm_6x). */
#define NVML_DEVICE_ARCH_VOLTA 5            /* Volta (sm_70). */
#define NVML_DEVICE_ARCH_TURING 6           /* Turing (sm_75). */
#define NVML_DEVICE_ARCH_AMPERE 7           /* Ampere (sm_80, sm_86); first with MIG. */
#define NVML_DEVICE_ARCH_ADA 8              /* Ada Lovelace (sm_89). */
#define NVML_DEVICE_ARCH_HOPPER 9           /* Hopper (sm_90). */
#define NVML_DEVICE_ARCH_BLACKWELL 10       /* Blackwell (sm_100 and later). */
#define NVML_DEVICE_ARCH_RUBIN 13           /* Rubin (11 and 12 are not assigned). */
#define NVML_DEVICE_ARCH_UNKNOWN 0xffffffff /* Anything else, presumably newer. */

/* How close two GPUs are in the PCIe tree (nvmlDeviceGetTopologyCommonAncestor): their nearest common
 * ancestor, closest first. */
typedef enum nvmlGpuLevel_enum {
  NVML_TOPOLOGY_INTERNAL = 0,    /* The same board (two GPUs of one card, e.g. a K80). */
  NVML_TOPOLOGY_SINGLE = 10,     /* Through a single PCIe switch. */
  NVML_TOPOLOGY_MULTIPLE = 20,   /* Through several PCIe switches, no host bridge. */
  NVML_TOPOLOGY_HOSTBRIDGE = 30, /* Through the same host bridge. */
  NVML_TOPOLOGY_NODE = 40,       /* The same NUMA node, possibly several host bridges (was _CPU). */
  NVML_TOPOLOGY_SYSTEM = 50      /* Across NUMA nodes (the CPUs' interconnect). */
} nvmlGpuTopologyLevel_t;

/* A feature's state (nvmlDeviceGetNvLinkState: whether the link is active). */
typedef enum nvmlEnableState_enum {
  NVML_FEATURE_DISABLED = 0, /* Off / inactive. */
  NVML_FEATURE_ENABLED = 1   /* On / active. */
} nvmlEnableState_t;

/* Who may open contexts on a GPU (nvmlDeviceGetComputeMode / nvmlDeviceSetComputeMode); MPS wants
 * EXCLUSIVE_PROCESS, so that only the MPS server holds a context. 1 (EXCLUSIVE_THREAD) is retired. */
typedef enum nvmlComputeMode_enum {
  NVML_COMPUTEMODE_DEFAULT = 0,          /* Any number of contexts, from any process. */
  NVML_COMPUTEMODE_EXCLUSIVE_THREAD = 1, /* Retired. */
  NVML_COMPUTEMODE_PROHIBITED = 2,       /* No contexts at all. */
  NVML_COMPUTEMODE_EXCLUSIVE_PROCESS = 3 /* One process's contexts (the MPS server's). */
} nvmlComputeMode_t;

/* A clock domain (nvmlDeviceGetClockInfo). */
typedef enum nvmlClockType_enum {
  NVML_CLOCK_GRAPHICS = 0, /* The graphics engine. */
  NVML_CLOCK_SM = 1,       /* The streaming multiprocessors. */
  NVML_CLOCK_MEM = 2,      /* The memory. */
  NVML_CLOCK_VIDEO = 3     /* The video encoder and decoder. */
} nvmlClockType_t;

/* A temperature sensor (nvmlDeviceGetTemperature); the memory's is a field value instead. */
typedef enum nvmlTemperatureSensors_enum {
  NVML_TEMPERATURE_GPU = 0 /* The GPU die, degrees C. */
} nvmlTemperatureSensors_t;

/* A direction of PCIe traffic (nvmlDeviceGetPcieThroughput): KB/s over the last 20 ms. */
typedef enum nvmlPcieUtilCounter_enum {
  NVML_PCIE_UTIL_TX_BYTES = 0, /* Sent by the GPU. */
  NVML_PCIE_UTIL_RX_BYTES = 1  /* Received by the GPU. */
} nvmlPcieUtilCounter_t;

/* The kind of ECC error counted (nvmlDeviceGetTotalEccErrors). */
typedef enum nvmlMemoryErrorType_enum {
  NVML_MEMORY_ERROR_TYPE_CORRECTED = 0,  /* Single bit, corrected (SBE). */
  NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1 /* Double bit, not corrected (DBE). */
} nvmlMemoryErrorType_t;

/* Which ECC counter (nvmlDeviceGetTotalEccErrors). */
typedef enum nvmlEccCounterType_enum {
  NVML_VOLATILE_ECC = 0, /* Since the driver loaded. */
  NVML_AGGREGATE_ECC = 1 /* Over the GPU's life (kept in its infoROM). */
} nvmlEccCounterType_t;

/* Why pages were retired (nvmlDeviceGetRetiredPages). */
typedef enum nvmlPageRetirementCause_enum {
  NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0, /* Repeated corrected errors. */
  NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1            /* An uncorrected error. */
} nvmlPageRetirementCause_t;

/* Which member of nvmlValue_t a field value fills. */
typedef enum nvmlValueType_enum {
  NVML_VALUE_TYPE_DOUBLE = 0,             /* dVal */
  NVML_VALUE_TYPE_UNSIGNED_INT = 1,       /* uiVal */
  NVML_VALUE_TYPE_UNSIGNED_LONG = 2,      /* ulVal */
  NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3, /* ullVal */
  NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,   /* sllVal */
  NVML_VALUE_TYPE_SIGNED_INT = 5,         /* siVal */
  NVML_VALUE_TYPE_UNSIGNED_SHORT = 6      /* usVal */
} nvmlValueType_t;

/* Field ids of nvmlDeviceGetFieldValues that gpuctk reads (NVML numbers hundreds). */
#define NVML_FI_DEV_MEMORY_TEMP 82                /* Memory temperature, degrees C. */
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX 138 /* NVLink data sent, KiB, all links, since load. */
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX 139 /* NVLink data received, KiB, likewise. */

/* The version word of a versioned struct: its size in the low 24 bits, the version above them. */
#define NVML_STRUCT_VERSION(data, ver) (unsigned int)(sizeof(nvml##data##_v##ver##_t) | ((ver) << 24U))

/* ---------------------------------------------------------------------------------------------------
 * Structures
 * ------------------------------------------------------------------------------------------------- */

/* Opaque handle of a MIG GPU instance (nvmlDeviceGetGpuInstanceById). */
typedef struct nvmlGpuInstance_st* nvmlGpuInstance_t;

/* Opaque handle of an event set (nvmlEventSetCreate). */
typedef struct nvmlEventSet_st* nvmlEventSet_t;

/* PCI identity of a GPU: the layout filled by nvmlDeviceGetPciInfo_v3 (and _v2). The deprecated
 * unversioned nvmlDeviceGetPciInfo filled an older 52-byte struct whose first 36 bytes equal the first
 * five members here; use _v3. */
typedef struct nvmlPciInfo_st {
  char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE]; /* "0000:07:00.0" (4-digit domain). */
  unsigned int domain;                                     /* PCI domain, 0 to 0xffffffff. */
  unsigned int bus;                                        /* Bus number, 0 to 0xff. */
  unsigned int device;                                     /* Device number on the bus, 0 to 31. */
  unsigned int pciDeviceId;                                /* (device id << 16) | vendor id. */
  unsigned int pciSubSystemId;                             /* (subsystem id << 16) | subsys vendor. */
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];          /* "00000000:07:00.0" (8-digit domain). */
} nvmlPciInfo_t;

/* Device memory in bytes (nvmlDeviceGetMemoryInfo, v1 layout); on a MIG handle, the MIG device's share. */
typedef struct nvmlMemory_st {
  unsigned long long total; /* Total physical memory. */
  unsigned long long free;  /* Unallocated memory. */
  unsigned long long used;  /* Reserved plus allocated memory. */
} nvmlMemory_t;

/* Attributes of a (MIG) device: nvmlDeviceGetAttributes_v2 fills all of it. The deprecated unversioned
 * nvmlDeviceGetAttributes fills only the first six members (its struct ended there). */
typedef struct nvmlDeviceAttributes_st {
  unsigned int multiprocessorCount;       /* Streaming multiprocessors. */
  unsigned int sharedCopyEngineCount;     /* Shared copy engines. */
  unsigned int sharedDecoderCount;        /* Shared decoder engines. */
  unsigned int sharedEncoderCount;        /* Shared encoder engines. */
  unsigned int sharedJpegCount;           /* Shared JPEG engines. */
  unsigned int sharedOfaCount;            /* Shared optical-flow engines. */
  unsigned int gpuInstanceSliceCount;     /* GPU instance slices ("3" of profile 3g.20gb). */
  unsigned int computeInstanceSliceCount; /* Compute instance slices ("1" of 1c.3g.20gb). */
  unsigned long long memorySizeMB;        /* Device memory in MiB. */
} nvmlDeviceAttributes_t;

/* Where a GPU instance sits: a run of the GPU's memory slices. */
typedef struct nvmlGpuInstancePlacement_st {
  unsigned int start; /* First memory slice. */
  unsigned int size;  /* Memory slices. */
} nvmlGpuInstancePlacement_t;

/* A GPU instance profile (nvmlDeviceGetGpuInstanceProfileInfo). */
typedef struct nvmlGpuInstanceProfileInfo_st {
  unsigned int id;                  /* The profile's id on this device (what GI info's profileId names). */
  unsigned int isP2pSupported;      /* Peer-to-peer between instances of it. */
  unsigned int sliceCount;          /* Compute (GPU) slices: the N of Ng. */
  unsigned int instanceCount;       /* How many instances of it the GPU can hold. */
  unsigned int multiprocessorCount; /* SMs. */
  unsigned int copyEngineCount;     /* Copy engines. */
  unsigned int decoderCount;        /* Decoders. */
  unsigned int encoderCount;        /* Encoders. */
  unsigned int jpegCount;           /* JPEG engines. */
  unsigned int ofaCount;            /* Optical-flow engines. */
  unsigned long long memorySizeMB;  /* Memory in MiB. */
} nvmlGpuInstanceProfileInfo_t;

/* A GPU instance (nvmlGpuInstanceGetInfo). */
typedef struct nvmlGpuInstanceInfo_st {
  nvmlDevice_t device;                  /* The whole GPU it is part of. */
  unsigned int id;                      /* GPU instance id, unique on the device. */
  unsigned int profileId;               /* Its profile's id (not the profile index). */
  nvmlGpuInstancePlacement_t placement; /* Its memory slices. */
} nvmlGpuInstanceInfo_t;

/* One event (nvmlEventSetWait_v2). */
typedef struct nvmlEventData_st {
  nvmlDevice_t device;            /* The GPU it happened on (a whole-GPU handle). */
  unsigned long long eventType;   /* One nvmlEventType* bit. */
  unsigned long long eventData;   /* The Xid of an Xid event (999: unknown Xid); 0 for other types. */
  unsigned int gpuInstanceId;     /* The MIG GPU instance it concerns, else NVML_EVENT_INSTANCE_NONE. */
  unsigned int computeInstanceId; /* The MIG compute instance it concerns, else NVML_EVENT_INSTANCE_NONE. */
} nvmlEventData_t;

/* Device memory in bytes, version 2 (nvmlDeviceGetMemoryInfo_v2): the caller sets `version` first. */
typedef struct nvmlMemory_v2_st {
  unsigned int version;        /* nvmlMemory_v2. */
  unsigned long long total;    /* Total physical memory. */
  unsigned long long reserved; /* Reserved by the system and the driver. */
  unsigned long long free;     /* Unallocated memory. */
  unsigned long long used;     /* Allocated memory (without the reserved part). */
} nvmlMemory_v2_t;
#define nvmlMemory_v2 NVML_STRUCT_VERSION(Memory, 2)

/* Percentages of the last sample period (nvmlDeviceGetUtilizationRates). */
typedef struct nvmlUtilization_st {
  unsigned int gpu;    /* Time one or more kernels ran. */
  unsigned int memory; /* Time device memory was read or written. */
} nvmlUtilization_t;

/* One value of nvmlDeviceGetFieldValues; valueType says which member is set. */
typedef union nvmlValue_st {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  unsigned short usVal;
} nvmlValue_t;

/* One field of nvmlDeviceGetFieldValues: the caller sets fieldId (and scopeId), NVML the rest. */
typedef struct nvmlFieldValue_st {
  unsigned int fieldId;      /* NVML_FI_*. */
  unsigned int scopeId;      /* Link or sub-unit for scoped fields; 0 otherwise. */
  long long timestamp;       /* When it was read, microseconds since 1970. */
  long long latencyUsec;     /* How long reading it took. */
  nvmlValueType_t valueType; /* Which member of value is set. */
  nvmlReturn_t nvmlReturn;   /* This field's own result. */
  nvmlValue_t value;
} nvmlFieldValue_t;

/* ---------------------------------------------------------------------------------------------------
 * Function-pointer types: one per NVML symbol we resolve; the typedef is the symbol name plus "_fn".
 * ------------------------------------------------------------------------------------------------- */

/* Initialisation and errors. */
typedef nvmlReturn_t (*nvmlInit_fn)(void);                        /* Deprecated v1 init (ref counted). */
typedef nvmlReturn_t (*nvmlInit_v2_fn)(void);                     /* Init NVML and attach all GPUs. */
typedef nvmlReturn_t (*nvmlInitWithFlags_fn)(unsigned int flags); /* Init with NVML_INIT_FLAG_*. */
typedef nvmlReturn_t (*nvmlShutdown_fn)(void);                    /* Drop one init reference. */
typedef const char* (*nvmlErrorString_fn)(nvmlReturn_t result);   /* Static text of a code. */

/* System queries. */
typedef nvmlReturn_t (*nvmlSystemGetDriverVersion_fn)(char* version, unsigned int length); /* "550.54.15" */
typedef nvmlReturn_t (*nvmlSystemGetNVMLVersion_fn)(char* version, unsigned int length); /* "12.550.54.15" */
typedef nvmlReturn_t (*nvmlSystemGetCudaDriverVersion_fn)(int* cudaDriverVersion);       /* 12040 */
typedef nvmlReturn_t (*nvmlSystemGetCudaDriverVersion_v2_fn)(int* cudaDriverVersion);    /* 12040 */

/* Enumeration and handles. */
typedef nvmlReturn_t (*nvmlDeviceGetCount_fn)(unsigned int* deviceCount);    /* Deprecated v1 count. */
typedef nvmlReturn_t (*nvmlDeviceGetCount_v2_fn)(unsigned int* deviceCount); /* Number of GPUs. */
typedef nvmlReturn_t (*nvmlDeviceGetHandleByIndex_fn)(unsigned int index, nvmlDevice_t* device); /* v1 */
typedef nvmlReturn_t (*nvmlDeviceGetHandleByIndex_v2_fn)(unsigned int index, nvmlDevice_t* device);
typedef nvmlReturn_t (*nvmlDeviceGetHandleByUUID_fn)(const char* uuid, nvmlDevice_t* device); /* GPU/MIG */
typedef nvmlReturn_t (*nvmlDeviceGetHandleByPciBusId_v2_fn)(const char* pciBusId, nvmlDevice_t* device);

/* Identity of a device. */
typedef nvmlReturn_t (*nvmlDeviceGetIndex_fn)(nvmlDevice_t device, unsigned int* index); /* NVML index */
typedef nvmlReturn_t (*nvmlDeviceGetUUID_fn)(nvmlDevice_t device, char* uuid, unsigned int length);
typedef nvmlReturn_t (*nvmlDeviceGetName_fn)(nvmlDevice_t device, char* name, unsigned int length);
typedef nvmlReturn_t (*nvmlDeviceGetMinorNumber_fn)(nvmlDevice_t device,
                                                    unsigned int* minorNumber);           /* /dev/nvidiaN */
typedef nvmlReturn_t (*nvmlDeviceGetPciInfo_fn)(nvmlDevice_t device, nvmlPciInfo_t* pci); /* Old layout. */
typedef nvmlReturn_t (*nvmlDeviceGetPciInfo_v2_fn)(nvmlDevice_t device, nvmlPciInfo_t* pci); /* Deprecated. */
typedef nvmlReturn_t (*nvmlDeviceGetPciInfo_v3_fn)(nvmlDevice_t device, nvmlPciInfo_t* pci); /* Use this. */
typedef nvmlReturn_t (*nvmlDeviceGetMemoryInfo_fn)(nvmlDevice_t device, nvmlMemory_t* memory);
typedef nvmlReturn_t (*nvmlDeviceGetComputeMode_fn)(nvmlDevice_t device, nvmlComputeMode_t* mode);
typedef nvmlReturn_t (*nvmlDeviceSetComputeMode_fn)(nvmlDevice_t device, nvmlComputeMode_t mode); /* Root. */
typedef nvmlReturn_t (*nvmlDeviceGetCudaComputeCapability_fn)(nvmlDevice_t device, int* major, int* minor);
typedef nvmlReturn_t (*nvmlDeviceGetBrand_fn)(nvmlDevice_t device, nvmlBrandType_t* type);
typedef nvmlReturn_t (*nvmlDeviceGetArchitecture_fn)(nvmlDevice_t device, nvmlDeviceArchitecture_t* arch);
typedef nvmlReturn_t (*nvmlDeviceGetAttributes_fn)(nvmlDevice_t device,
                                                   nvmlDeviceAttributes_t* attributes); /* 6 members */
typedef nvmlReturn_t (*nvmlDeviceGetAttributes_v2_fn)(nvmlDevice_t device,
                                                      nvmlDeviceAttributes_t* attributes);

/* Multi-Instance GPU. */
typedef nvmlReturn_t (*nvmlDeviceGetMigMode_fn)(nvmlDevice_t device, unsigned int* currentMode,
                                                unsigned int* pendingMode); /* NVML_DEVICE_MIG_* */
typedef nvmlReturn_t (*nvmlDeviceGetMaxMigDeviceCount_fn)(nvmlDevice_t device, unsigned int* count);
typedef nvmlReturn_t (*nvmlDeviceGetMigDeviceHandleByIndex_fn)(nvmlDevice_t device, unsigned int index,
                                                               nvmlDevice_t* migDevice);
typedef nvmlReturn_t (*nvmlDeviceIsMigDeviceHandle_fn)(nvmlDevice_t device, unsigned int* isMigDevice);
typedef nvmlReturn_t (*nvmlDeviceGetDeviceHandleFromMigDeviceHandle_fn)(nvmlDevice_t migDevice,
                                                                        nvmlDevice_t* device); /* Parent. */
typedef nvmlReturn_t (*nvmlDeviceGetGpuInstanceId_fn)(nvmlDevice_t device, unsigned int* id);  /* GI id */
typedef nvmlReturn_t (*nvmlDeviceGetComputeInstanceId_fn)(nvmlDevice_t device, unsigned int* id); /* CI id */
typedef nvmlReturn_t (*nvmlDeviceGetGpuInstanceProfileInfo_fn)(nvmlDevice_t device, unsigned int profile,
                                                               nvmlGpuInstanceProfileInfo_t* info);
typedef nvmlReturn_t (*nvmlDeviceGetGpuInstanceById_fn)(nvmlDevice_t device, unsigned int id,
                                                        nvmlGpuInstance_t* gpuInstance);
typedef nvmlReturn_t (*nvmlGpuInstanceGetInfo_fn)(nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t* info);

/* Events (the device plugin's health check). */
typedef nvmlReturn_t (*nvmlEventSetCreate_fn)(nvmlEventSet_t* set);
typedef nvmlReturn_t (*nvmlDeviceGetSupportedEventTypes_fn)(nvmlDevice_t device,
                                                            unsigned long long* eventTypes);
typedef nvmlReturn_t (*nvmlDeviceRegisterEvents_fn)(nvmlDevice_t device, unsigned long long eventTypes,
                                                    nvmlEventSet_t set);
typedef nvmlReturn_t (*nvmlEventSetWait_v2_fn)(nvmlEventSet_t set, nvmlEventData_t* data,
                                               unsigned int timeoutms); /* NVML_ERROR_TIMEOUT: none came */
typedef nvmlReturn_t (*nvmlEventSetFree_fn)(nvmlEventSet_t set);

/* Topology (the device plugin's preferred allocation). */
typedef nvmlReturn_t (*nvmlDeviceGetTopologyCommonAncestor_fn)(nvmlDevice_t device1, nvmlDevice_t device2,
                                                               nvmlGpuTopologyLevel_t* pathInfo);
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkState_fn)(nvmlDevice_t device, unsigned int link,
                                                    nvmlEnableState_t* isActive);
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkRemotePciInfo_v2_fn)(nvmlDevice_t device, unsigned int link,
                                                               nvmlPciInfo_t* pci); /* the peer's identity */

/* Telemetry (gpuctk-exporter's readings; Nvml::sample). */
typedef nvmlReturn_t (*nvmlDeviceGetClockInfo_fn)(nvmlDevice_t device, nvmlClockType_t type,
                                                  unsigned int* clock); /* MHz */
typedef nvmlReturn_t (*nvmlDeviceGetTemperature_fn)(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
                                                    unsigned int* temp); /* degrees C */
typedef nvmlReturn_t (*nvmlDeviceGetFieldValues_fn)(nvmlDevice_t device, int valuesCount,
                                                    nvmlFieldValue_t* values);
typedef nvmlReturn_t (*nvmlDeviceGetPowerUsage_fn)(nvmlDevice_t device, unsigned int* power); /* mW */
typedef nvmlReturn_t (*nvmlDeviceGetTotalEnergyConsumption_fn)(nvmlDevice_t device,
                                                               unsigned long long* energy); /* mJ */
typedef nvmlReturn_t (*nvmlDeviceGetPcieThroughput_fn)(nvmlDevice_t device, nvmlPcieUtilCounter_t counter,
                                                       unsigned int* value); /* KB/s */
typedef nvmlReturn_t (*nvmlDeviceGetPcieReplayCounter_fn)(nvmlDevice_t device, unsigned int* value);
typedef nvmlReturn_t (*nvmlDeviceGetUtilizationRates_fn)(nvmlDevice_t device, nvmlUtilization_t* utilization);
typedef nvmlReturn_t (*nvmlDeviceGetEncoderUtilization_fn)(nvmlDevice_t device, unsigned int* utilization,
                                                           unsigned int* samplingPeriodUs); /* % */
typedef nvmlReturn_t (*nvmlDeviceGetDecoderUtilization_fn)(nvmlDevice_t device, unsigned int* utilization,
                                                           unsigned int* samplingPeriodUs); /* % */
typedef nvmlReturn_t (*nvmlDeviceGetMemoryInfo_v2_fn)(nvmlDevice_t device, nvmlMemory_v2_t* memory);
typedef nvmlReturn_t (*nvmlDeviceGetRemappedRows_fn)(nvmlDevice_t device, unsigned int* corrRows,
                                                     unsigned int* uncRows, unsigned int* isPending,
                                                     unsigned int* failureOccurred);
typedef nvmlReturn_t (*nvmlDeviceGetTotalEccErrors_fn)(nvmlDevice_t device, nvmlMemoryErrorType_t errorType,
                                                       nvmlEccCounterType_t counterType,
                                                       unsigned long long* eccCounts);
/* *pageCount in: room in addresses; out: the pages. With room 0 (addresses may be NULL) NVML writes the
 * count and answers NVML_ERROR_INSUFFICIENT_SIZE when there are any, SUCCESS when there are none. */
typedef nvmlReturn_t (*nvmlDeviceGetRetiredPages_fn)(nvmlDevice_t device, nvmlPageRetirementCause_t cause,
                                                     unsigned int* pageCount, unsigned long long* addresses);
typedef nvmlReturn_t (*nvmlDeviceGetRetiredPagesPendingStatus_fn)(nvmlDevice_t device,
                                                                  nvmlEnableState_t* isPending);

/* ---------------------------------------------------------------------------------------------------
 * Layout pins: a mismatch here would silently corrupt memory at run time, so fail the build instead.
 * ------------------------------------------------------------------------------------------------- */
#ifdef __cplusplus
#define GPUCTK_NVML_ABI_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define GPUCTK_NVML_ABI_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif
#define GPUCTK_NVML_ABI_OFFSETOF(type, member) offsetof(type, member)

GPUCTK_NVML_ABI_ASSERT(sizeof(nvmlReturn_t) == 4, "nvmlReturn_t is a 4-byte enum");
GPUCTK_NVML_ABI_ASSERT(sizeof(nvmlBrandType_t) == 4, "nvmlBrandType_t is a 4-byte enum");
GPUCTK_NVML_ABI_ASSERT(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t (v3) is 68 bytes");
GPUCTK_NVML_ABI_ASSERT(GPUCTK_NVML_ABI_OFFSETOF(nvmlPciInfo_t, domain) == 16, "domain after busIdLegacy");
GPUCTK_NVML_ABI_ASSERT(GPUCTK_NVML_ABI_OFFSETOF(nvmlPciInfo_t, pciSubSystemId) == 32, "pciSubSystemId");
GPUCTK_NVML_ABI_ASSERT(GPUCTK_NVML_ABI_OFFSETOF(nvmlPciInfo_t, busId) == 36, "busId after the ids");
GPUCTK_NVML_ABI_ASSERT(sizeof(nvmlMemory_t) == 24, "nvmlMemory_t is three 64-bit counters");
GPUCTK_NVML_ABI_ASSERT(GPUCTK_NVML_ABI_OFFSETOF(nvmlDeviceAttributes_t, gpuInstanceSliceCount) == 24,
                       "v2 members follow the six v1 members");
GPUCTK_NVML_ABI_ASSERT(GPUCTK_NVML_ABI_OFFSETOF(nvmlDeviceAttributes_t, memorySizeMB) == 32,
                       "memorySizeMB follows the slice counts");
GPUCTK_NVML_ABI_ASSERT(sizeof(nvmlGpuInstancePlacement_t) == 8, "two 32-bit words");
GPUCTK_NVML_ABI_ASSERT(sizeof(nvmlGpuInstanceProfileInfo_t) == 48, "ten words and a 64-bit memory size");
GPUCTK_NVML_ABI_ASSERT(GPUCTK_NVML_ABI_OFFSETOF(nvmlGpuInstanceProfileInfo_t, memorySizeMB) == 40,
                       "memorySizeMB after the ten counters");
GPUCTK_NVML_ABI_ASSERT(sizeof(nvmlGpuInstanceInfo_t) == 24, "handle, two ids, placement");
GPUCTK_NVML_ABI_ASSERT(GPUCTK_NVML_ABI_OFFSETOF(nvmlGpuInstanceInfo_t, placement) == 16, "placement last");
GPUCTK_NVML_ABI_ASSERT(sizeof(nvmlGpuTopologyLevel_t) == 4, "nvmlGpuTopologyLevel_t is a 4-byte enum");
GPUCTK_NVML_ABI_ASSERT(sizeof(nvmlEnableState_t) == 4, "nvmlEnableState_t is a 4-byte enum");
GPUCTK_NVML_ABI_ASSERT(sizeof(nvmlEventData_t) == 32, "nvmlEventData_t is 32 bytes");
GPUCTK_NVML_ABI_ASSERT(GPUCTK_NVML_ABI_OFFSETOF(nvmlEventData_t, eventData) == 16,
                       "eventData after eventType");
GPUCTK_NVML_ABI_ASSERT(GPUCTK_NVML_ABI_OFFSETOF(nvmlEventData_t, computeInstanceId) == 28,
                       "the instance ids close the struct");
GPUCTK_NVML_ABI_ASSERT(sizeof(nvmlClockType_t) == 4, "enums are 4 bytes");
GPUCTK_NVML_ABI_ASSERT(sizeof(nvmlValueType_t) == 4, "enums are 4 bytes");
GPUCTK_NVML_ABI_ASSERT(sizeof(nvmlMemory_v2_t) == 40, "a version word, padding, four 64-bit counters");
GPUCTK_NVML_ABI_ASSERT(GPUCTK_NVML_ABI_OFFSETOF(nvmlMemory_v2_t, total) == 8, "total after the padding");
GPUCTK_NVML_ABI_ASSERT(GPUCTK_NVML_ABI_OFFSETOF(nvmlMemory_v2_t, used) == 32, "used last");
GPUCTK_NVML_ABI_ASSERT(nvmlMemory_v2 == (40U | (2U << 24)), "version word of nvmlMemory_v2_t");
GPUCTK_NVML_ABI_ASSERT(sizeof(nvmlUtilization_t) == 8, "two percentages");
GPUCTK_NVML_ABI_ASSERT(sizeof(nvmlValue_t) == 8, "the largest member is 64 bits");
GPUCTK_NVML_ABI_ASSERT(sizeof(nvmlFieldValue_t) == 40, "nvmlFieldValue_t is 40 bytes");
GPUCTK_NVML_ABI_ASSERT(GPUCTK_NVML_ABI_OFFSETOF(nvmlFieldValue_t, valueType) == 24, "after the two times");
GPUCTK_NVML_ABI_ASSERT(GPUCTK_NVML_ABI_OFFSETOF(nvmlFieldValue_t, value) == 32, "the value last");

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GPUCTK_DISCOVER_NVML_ABI_H */
