#!/usr/bin/env bash
# gpuctk-exporter on a full MIG host: 8 A100s in MIG mode, each cut into 7 1g.5gb devices (64 devices), the
# mock NVML serving them (dgx-a100 materialised, its nvml-mock.conf replaced by that layout, every reading
# the mock has in its nvml-telemetry). Measured by bench/exporter_bench.py: one scrape's size; scrape
# latency (median, p99) over 10 000 keep-alive requests and /health over the same connection (the client's
# floor); the exporter's resident set before and after those scrapes and its peak; its CPU (utime + stime)
# over 60 s at one scrape a second with -c 1000; and the collection's time per device and per GPU
# (gpuctk_exporter_last_collection_duration_seconds).
#   usage: bench/exporter.sh [build-dir] [exporter_bench.py options: --scrapes N --cpu-seconds S]
#   (default build/bench-release, configured Release here with -DGPUCTK_EXPORTER=ON; a given build-dir
#   must have been configured with -DGPUCTK_EXPORTER=ON)
bench_configure=-DGPUCTK_EXPORTER=ON
build_arg=()
if [ "$#" -gt 0 ] && [ "${1#--}" = "$1" ]; then
  build_arg=("$1")
  shift
fi
options=("$@")
set -- "${build_arg[@]}"
source "$(dirname "$0")/lib.sh"
exporter=$(find "$build/src" -name gpuctk-exporter -type f -perm -u+x | head -n 1)
[ -n "$exporter" ] || { echo "bench/exporter.sh: no gpuctk-exporter in $build (configure with -DGPUCTK_EXPORTER=ON)" >&2; exit 1; }
echo "gpuctk-exporter: $(du -h "$(realpath "$exporter")" | cut -f1) ($build)"

# The mock's data file (fixtures/mock_nvml/mock_nvml.h): dgx-a100's driver and GPUs, every GPU in MIG mode
# with 7 1g.5gb devices on GPU instances 7-13 (the memory eighths; the eighth is left free, as on an A100),
# its topology records kept.
conf=$(find "$root/host" -name nvml-mock.conf | head -n 1)
python3 - "$conf" <<'PY'
import sys, uuid
path = sys.argv[1]
out = []
gpus = 0
for line in open(path):
    fields = line.rstrip("\n").split("\t")
    if fields[0] == "mig":
        continue
    if fields[0] == "gpu":
        record = dict(f.split("=", 1) for f in fields[1:])
        record["mig_mode"], record["max_mig"] = "1", "7"
        line = "\t".join(["gpu"] + [f"{k}={v}" for k, v in record.items()]) + "\n"
        gpus += 1
    out.append(line)
for gpu in range(gpus):
    for slot in range(7):
        name = uuid.uuid5(uuid.NAMESPACE_OID, f"gpuctk-bench-mig-{gpu}-{slot}")
        out.append(f"mig\tparent={gpu}\tindex={slot}\tuuid=MIG-{name}\tgi={7 + slot}\tci=0\tprofile=1g.5gb"
                   f"\tmemory_total=5100273664\n")
open(path, "w").writelines(out)
# Every reading the mock has for a GPU (a MIG device answers only its memory), so that each collection
# makes every NVML call a real GPU answers.
gpu_keys = ("sm_clock=1410\tmemory_clock=1215\tgpu_temp=45\tmemory_temp=50\tpower_mw=95000\tenergy_mj=123456789"
            "\tpcie_tx=1000\tpcie_rx=2000\tpcie_replays=0\tgpu_util=80\tmemory_util=40\tencoder_util=0"
            "\tdecoder_util=0\tfb_used=20000000000\tfb_free=20000000000\tfb_reserved=500000000"
            "\tremapped_correctable=0\tremapped_uncorrectable=0\tremap_pending=0\tremap_failure=0"
            "\tnvlink_tx_kib=1000\tnvlink_rx_kib=1000\tecc_sbe_volatile=0\tecc_dbe_volatile=0"
            "\tecc_sbe_aggregate=0\tecc_dbe_aggregate=0\tretired_sbe=0\tretired_dbe=0\tretired_pending=0")
telemetry = []
for line in out:
    fields = line.rstrip("\n").split("\t")
    record = dict(f.split("=", 1) for f in fields[1:] if "=" in f)
    if fields[0] == "gpu":
        telemetry.append(f"sample\tuuid={record['uuid']}\t{gpu_keys}\n")
    elif fields[0] == "mig":
        telemetry.append(f"sample\tuuid={record['uuid']}\tfb_used=2000000000\tfb_free=3000000000\tfb_reserved=0\n")
with open(path.rsplit("/", 1)[0] + "/nvml-telemetry", "w") as f:
    f.writelines(telemetry)
PY
echo "host: $(grep -c '^gpu' "$conf") GPUs, $(grep -c '^mig' "$conf") MIG devices ($(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
/usr/bin/python3 bench/exporter_bench.py "$exporter" "$root/host" "${options[@]}"
