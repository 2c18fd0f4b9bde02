"""The pre-flight: a self-contained bash block every generated script runs on each node
before any model loads (and `dflash-plan doctor` runs on this machine). It checks what
a 20-node run otherwise finds only after the capture servers have loaded: the GPUs (type,
count, free memory for the role), the driver against the CUDA runtime the installed torch
links, Python and glibc against what the pinned wheels need, the RDMA libraries Mooncake
loads, the pinned packages, the fabric address the node binds, the route and ports to the
other nodes, free disk and host memory. Each failure is one line,
`preflight: <node>: <what> is <found>, needs <needed> (<how to fix>)`; every check runs,
then the block fails when any did. Every value reaching bash goes through escape.py."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..core.projection import Projection, project
from ..inputs.formats import row_of
from .common import (
    GIB,
    MOONCAKE_METADATA_PORT,
    MOONCAKE_RPC_PORT,
    Context,
    output_dir,
)
from .escape import q, terminator
from .paths import launch_transport

__all__ = ["NodeNeeds", "Pins", "Preflight", "block", "needs", "program"]


# --- what the pinned wheels need ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Pins:
    """What a format's installed stack needs on a node: its packages as requirements
    (`name==version` exact, `name>=version` a floor, `name @ git+URL@COMMIT` a source
    install checked for presence only), the lowest Python and glibc its wheels run on,
    and the CUDA major its pinned torch links (None: no torch pinned; the installed
    one's is read on the node)."""

    packages: tuple[str, ...]
    python: str
    glibc: str
    cuda_major: int | None
    source: str  # what the fix hints name, e.g. "specforge 0.2.0"
    torch: str  # the pinned torch's version ("" when none)


# torch's Linux wheels are manylinux_2_28 (torch-2.11.0-cp311-cp311-manylinux_2_28_x86_64
# .whl, tests/data/wheels/facts.toml): the glibc floor of a stack without SGLang, whose
# 0.5.14 wheels (manylinux_2_34) set the line's.
TORCH_GLIBC = "2.28"


def pins(ctx: Context, fmt: str) -> Pins | None:
    """The packages, Python, glibc and CUDA the launch of fmt installs on the context's
    upstream line (versions.py; None: the user's own command, whose stack the planner does
    not know)."""
    from . import versions

    line = versions.effective_line(ctx.plan, ctx.line, fmt)
    every = versions.pins_for(fmt, ctx.line, ctx.plan)
    packages: list[str] = []
    torch = ""
    for pin in every:
        if pin.is_file:
            continue  # a script of a checkout: no distribution to ask for
        if pin.package.startswith("mooncake") and launch_transport(ctx.plan, fmt) != "mooncake":
            continue
        if pin.source == versions.PYPI:
            packages.append(f"{pin.package}=={pin.version}")
            torch = pin.version if pin.package == "torch" else torch
        elif pin.source == versions.PYPI_FLOOR:
            packages.append(f"{pin.package}>={pin.version}")
        else:
            packages.append(pin.requirement)  # a git commit: present, whatever it calls itself
    if not packages:
        return None
    sglang = any(re.split("[=>]=| @ ", p)[0] == "sglang" for p in packages)
    return Pins(
        tuple(packages),
        line.python,
        line.glibc if sglang else TORCH_GLIBC,
        line.cuda_major if torch else None,
        every[0].short,
        torch,
    )


def checkpoint_disk_gb(projection: Projection) -> float:
    """Disk the run's checkpoints need, GB: the kept checkpoints at their peak, the save's
    temporary copy included (core/checkpoints.py)."""
    return projection.checkpoints.total_tb * 1000


# --- what each node needs ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NodeNeeds:
    """One node (or one kind of pod) of the launch."""

    label: str  # as the failure lines name it
    gpu_name: str | None  # the catalog GPU's name (None: no NVIDIA GPU to check)
    gpus: int
    gpu_free_gib: float  # per GPU, the most any role on the node needs
    serves: tuple[int, ...]  # ports this node's services listen on: must be free
    reaches: tuple[tuple[int, int], ...]  # (node, port) on other nodes it connects to
    binds: bool  # Mooncake binds the node's fabric address (MC_TCP_BIND_ADDRESS)
    memory_gib: float  # host memory its store segments, buffers and loads take
    disk_gb: float  # free disk at the output folder


@dataclass(frozen=True, slots=True)
class Preflight:
    nodes: tuple[NodeNeeds, ...]
    hosts: tuple[str, ...]  # each node's address as the script names it (node 0 first)
    pins: Pins | None
    rdma: bool
    disk_path: str
    disk_why: str
    memory_why: str


# Words of a catalog name that nvidia-smi's name leaves out (an H100 SXM shows as "NVIDIA
# H100 80GB HBM3").
FORM_FACTOR_WORDS = frozenset({"SXM", "SXM4", "SXM5"})


def _gpu_name(ctx: Context, key: str) -> str | None:
    """The words nvidia-smi's name of the catalog GPU holds, each matched without regard
    to case (None: not an NVIDIA GPU, which nvidia-smi does not see: an AMD Instinct's
    arch is cdna*)."""
    gpu = ctx.catalog.gpus[key]
    if gpu.arch.startswith("cdna"):
        return None
    return " ".join(w for w in gpu.name.split() if w.upper() not in FORM_FACTOR_WORDS)


def _memory_gib(ctx: Context, projection: Projection, servers: int, ranks: int) -> float:
    """Host memory of a node running `servers` capture servers and `ranks` trainer ranks:
    each server's Mooncake segment and local buffer and the target weights it loads
    through host memory; each rank's buffer and two fetched batches (the projection's
    store_memory, the sizing the launch writes; slurm's --mem counts the same)."""
    store = projection.store_memory
    if store is None or ctx.plan.workload.mode == "offline":
        return 0.0
    weights = ctx.memory.weights_gib * ctx.plan.target.tp
    server = store.segment_gib + store.local_buffer_gib + weights
    return servers * server + ranks * store.rank_gib


def _disk(projection: Projection, offline: bool) -> tuple[float, str]:
    """Free disk the output folder needs, GB, and what for: the checkpoints and, offline,
    the captured hidden states."""
    checkpoints = checkpoint_disk_gb(projection)
    data = projection.offline.tb * 1000 if offline and projection.offline else 0.0
    kept = projection.checkpoints.keep
    why = f"{kept} checkpoint(s) kept and the one being saved ({checkpoints:,.0f} GB"
    why += f") and the captured hidden states ({data:,.0f} GB)" if data else ")"
    return checkpoints + data, why


def _rdma(ctx: Context, fmt: str) -> bool:
    """Mooncake runs over RDMA: device receive on a format that is not TCP-only."""
    p = ctx.plan
    online = p.workload.mode != "offline" and p.workload.topology != "colocated"
    mooncake = online and launch_transport(p, fmt) == "mooncake"
    return mooncake and p.workload.receive == "device" and not row_of(fmt).mooncake_tcp


MEMORY_WHY = "the Mooncake segments and buffers and the target weights loaded through host memory"


def needs(ctx: Context, fmt: str, projection: Projection | None = None) -> Preflight:
    """Every node's needs for the launch of fmt (the plan's own layout)."""
    p, layout = ctx.plan, ctx.layout
    projection = projection or project(p, ctx.catalog)
    target_name = _gpu_name(ctx, ctx.resolved.target_gpu.key)
    drafter_name = _gpu_name(ctx, ctx.resolved.drafter_gpu.key)
    m = ctx.memory
    target_gib = m.weights_gib + m.kv_gib + m.activations_gib + m.capture_gib + m.runtime_gib
    drafter_gib = projection.drafter.memory.needed_gb
    colocated = p.workload.topology == "colocated"
    offline = p.workload.mode == "offline"
    mooncake = not offline and not colocated and launch_transport(p, fmt) == "mooncake"
    d_nodes = layout.drafter_nodes or (0,)
    head = d_nodes[0]
    multi = layout.nodes > 1
    # Ports: the capture servers on their nodes, reached by the trainer nodes; Mooncake's
    # master and metadata server on the head; torchrun's master port on the first node of
    # a multi-node trainer (or capture), reached by the others of that group.
    serves: dict[int, list[int]] = {n: [] for n in range(layout.nodes)}
    reaches: dict[int, list[tuple[int, int]]] = {n: [] for n in range(layout.nodes)}
    own_command = row_of(fmt).own_command
    if not colocated and not own_command and not offline:
        for r in layout.replicas:
            serves[r.node].append(r.port)
            for d in d_nodes:
                if d != r.node:
                    reaches[d].append((r.node, r.port))
    if mooncake and multi:
        store_ports = [MOONCAKE_RPC_PORT]
        if row_of(fmt).mooncake_tcp:  # SpecForge's master serves its metadata over HTTP
            store_ports.append(MOONCAKE_METADATA_PORT)
        serves[head] += store_ports
        for n in range(layout.nodes):
            if n != head:
                reaches[n] += [(head, port) for port in store_ports]
    groups = [tuple(range(layout.nodes))] if colocated else [d_nodes]
    if offline:
        groups.append(layout.target_nodes)
    for group in groups:
        if len(group) > 1 and not own_command:
            first = group[0]
            if p.launch.master_port not in serves[first]:
                serves[first].append(p.launch.master_port)
            for n in group[1:]:
                reaches[n].append((first, p.launch.master_port))
    disk_gb, disk_why = _disk(projection, offline)
    nodes = []
    for n, host in enumerate(layout.hosts):
        on_target = bool(layout.targets_on(n)) or colocated
        on_drafter = n in layout.drafters or colocated
        if colocated:
            gib, gpus = target_gib + drafter_gib, layout.gpus_per_node
            name = target_name
        else:
            gib = max(target_gib if on_target else 0.0, drafter_gib if on_drafter else 0.0)
            gpus = layout.gpus_used_on(n)
            name = target_name if on_target else drafter_name
        nodes.append(
            NodeNeeds(
                label=f"node{n}" + ("" if host == f"node{n}" else f" ({host})"),
                gpu_name=name,
                gpus=gpus,
                gpu_free_gib=gib,
                serves=tuple(dict.fromkeys(serves[n])),
                reaches=tuple(dict.fromkeys(reaches[n])),
                binds=mooncake and multi,
                memory_gib=0.0
                if not mooncake
                else _memory_gib(
                    ctx, projection, len(layout.targets_on(n)), len(layout.drafters.get(n, ()))
                ),
                disk_gb=disk_gb,
            )
        )
    return Preflight(
        nodes=tuple(nodes),
        hosts=layout.hosts,
        pins=pins(ctx, fmt),
        rdma=_rdma(ctx, fmt),
        disk_path=output_dir(p),
        disk_why=disk_why,
        memory_why=MEMORY_WHY,
    )


# --- the bash block ---------------------------------------------------------------------------

# Asks the node's Python (the one the scripts run) for its version, glibc, the CUDA major
# the installed torch was built for (read from torch/version.py, not imported), each
# package's version and whether each library loads (as Mooncake's engine loads it).
PROBE = r"""import ctypes, importlib.metadata as md, importlib.util as iu
import pathlib, platform, re, sys
print("python", "%d.%d.%d" % sys.version_info[:3])
print("glibc", platform.libc_ver()[1] or "-")
cuda = "-"
try:
    spec = iu.find_spec("torch")
except (ImportError, ValueError):
    spec = None
if spec is not None and spec.origin:
    version = pathlib.Path(spec.origin).with_name("version.py")
    text = version.read_text() if version.exists() else ""
    found = re.search(r"^cuda\b[^=\n]*=\s*['\"]([0-9.]+)", text, re.M)
    cuda = found.group(1) if found else "-"
print("torch-cuda", cuda)
for arg in sys.argv[1:]:
    if arg.startswith("lib"):
        try:
            ctypes.CDLL(arg)
            print("library", arg, "ok")
        except OSError:
            print("library", arg, "-")
    else:
        name = re.split("[=>]=| @ ", arg)[0]
        try:
            print("package", name, md.version(name))
        except md.PackageNotFoundError:
            print("package", name, "-")
"""

# The libraries Mooncake's RDMA transport loads (NEEDED of mooncake/engine.so and store.so
# in mooncake-transfer-engine 0.3.13.post1; tests/data/wheels/facts.toml), and the Debian
# packages that ship them.
RDMA_LIBRARIES = (("libibverbs.so.1", "libibverbs1"), ("libmlx5.so.1", "ibverbs-providers"))
# A TCP connection that gets no answer in this long counts as blocked (a firewall dropping
# it); a refusal means the host answered and nothing listens yet, which is right before the
# services start.
CONNECT_TIMEOUT_S = 3

# The checks, run by `dflash_preflight NODE [HOST...]`; the per-node table and the pins
# are filled in above it. Bash only, plus nvidia-smi, python, ip, getent, df, free,
# timeout and sort (coreutils); no nc.
_CHECKS = r"""  local failed=0 line found want
  dflash_fail() { local IFS=""; echo "preflight: $label: $*" >&2; failed=1; }
  # The newest CUDA the driver supports, from nvidia-smi's header.
  dflash_driver_cuda() {
    nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9][0-9.]*\).*/\1/p' | head -n 1
  }
  dflash_ver_ge() { [ "$(printf '%s\n' "$2" "$1" | sort -V | head -n 1)" = "$2" ]; }
  # GPUs: type, count, free memory (nvidia-smi lists every GPU the node has).
  if [ -n "$want_gpu" ]; then
    if ! command -v nvidia-smi >/dev/null 2>&1; then
      dflash_fail "nvidia-smi is missing, needs the NVIDIA driver for $want_gpus x $want_gpu " \
        "(install the driver)"
    else
      local names=() free=() bad_name="" bad_free="" i=0 word row
      # name, free MiB: the last comma ends the name (a name may hold one).
      while read -r row; do
        names+=("${row%,*}"); free+=("${row##*,}"); free[-1]="${free[-1]// /}"
      done < <(nvidia-smi --query-gpu=name,memory.free --format=csv,noheader,nounits 2>/dev/null)
      if [ "${#names[@]}" -lt "$want_gpus" ]; then
        dflash_fail "GPU count is ${#names[@]}, needs $want_gpus x $want_gpu (run on a node with " \
          "$want_gpus GPUs or change the plan's counts)"
      fi
      while [ "$i" -lt "${#names[@]}" ] && [ "$i" -lt "$want_gpus" ]; do
        for word in "${want_words[@]}"; do
          case "${names[$i],,}" in
            *"${word,,}"*) ;;
            *) bad_name="${bad_name:-GPU $i is ${names[$i]}}" ;;
          esac
        done
        case "${free[$i]}" in
          ''|*[!0-9]*) bad_free="${bad_free:+$bad_free, }GPU $i unknown" ;;
          *) [ "${free[$i]}" -ge "$want_free_mib" ] ||
               bad_free="${bad_free:+$bad_free, }GPU $i ${free[$i]} MiB" ;;
        esac
        i=$((i + 1))
      done
      [ -z "$bad_name" ] || dflash_fail "$bad_name, needs $want_gpu (the plan's GPU type: run on " \
        "$want_gpu nodes or set target.gpu / drafter.gpu to this one)"
      [ -z "$bad_free" ] || dflash_fail "free GPU memory is $bad_free, needs $want_free_mib MiB " \
        "per GPU (stop what holds it: nvidia-smi lists the processes)"
      if [ -n "$want_cuda" ]; then
        found="$(dflash_driver_cuda)" || found=""
        if [ -z "$found" ] || ! dflash_ver_ge "$found" "$want_cuda"; then
          dflash_fail "the driver's CUDA is ${found:-unknown}, needs $want_cuda or newer " \
            "($cuda_why links the CUDA $want_cuda runtime: install a driver that supports it)"
        fi
      fi
    fi
  fi
  # Python, glibc, torch's CUDA, the pinned packages, the RDMA libraries.
  if [ -n "$want_python" ]; then
    if ! command -v python >/dev/null 2>&1; then
      dflash_fail "python is missing, needs Python $want_python or newer ($pins_from: install it " \
        "and the packages)"
    else
      local py="" libc="" torch_cuda="" kind what version
      local -A got=()
      while read -r kind what version; do
        case "$kind" in
          python) py="$what" ;;
          glibc) libc="$what" ;;
          torch-cuda) torch_cuda="$what" ;;
          package|library) got["$what"]="$version" ;;
        esac
      done < <(python -I -c "$probe" "${packages[@]}" "${libraries[@]%%=*}" 2>/dev/null)
      if [ -z "$py" ] || ! dflash_ver_ge "$py" "$want_python"; then
        dflash_fail "Python is ${py:-not answering}, needs $want_python or newer ($pins_from " \
          "requires it: use a Python $want_python environment)"
      fi
      if [ -z "$libc" ] || [ "$libc" = - ] || ! dflash_ver_ge "$libc" "$want_glibc"; then
        dflash_fail "glibc is ${libc:-unknown}, needs $want_glibc or newer " \
          "(the pinned wheels are " \
          "manylinux_${want_glibc/./_}: use a newer OS image)"
      fi
      for line in "${packages[@]}"; do
        case "$line" in
          *'>='*) what="${line%%>=*}"; want="${line#*>=}"; found="${got[$what]:--}"
            [ "$found" = - ] || dflash_ver_ge "$found" "$want" ||
              dflash_fail "$what is $found, needs $want or newer (pip install '$line')" ;;
          *'=='*) what="${line%%==*}"; want="${line#*==}"; found="${got[$what]:--}"
            [ "$found" = - ] || [ "$found" = "$want" ] ||
              dflash_fail "$what is $found, needs $want (pip install '$line')" ;;
          *) what="${line%% @ *}"; want="an install"; found="${got[$what]:--}" ;;
        esac
        [ "$found" != - ] || dflash_fail "$what is missing, needs $want (pip install '$line')"
      done
      # Without a pinned torch: the CUDA the installed one links.
      if [ -n "$want_gpu" ] && [ -z "$want_cuda" ] && [ -n "$torch_cuda" ] &&
         [ "$torch_cuda" != - ] &&
         command -v nvidia-smi >/dev/null 2>&1; then
        found="$(dflash_driver_cuda)" || found=""
        if [ -n "$found" ] && ! dflash_ver_ge "$found" "${torch_cuda%%.*}"; then
          dflash_fail "the driver's CUDA is $found, needs ${torch_cuda%%.*} or newer (the " \
            "installed torch links the CUDA $torch_cuda runtime: upgrade the driver or install " \
            "torch for CUDA ${found%%.*})"
        fi
      fi
      for line in "${libraries[@]}"; do
        what="${line%%=*}"
        [ "${got[$what]:--}" = ok ] ||
          dflash_fail "$what is missing, needs to load (Mooncake's RDMA transport links it: " \
            "apt-get install ${line#*=})"
      done
    fi
  fi
  # The fabric address Mooncake binds (MC_TCP_BIND_ADDRESS) must be on a local interface.
  local head_addr=""
  if [ "$binds" = 1 ]; then
    found="${MC_TCP_BIND_ADDRESS:-${DFLASH_FABRIC_IP:-}}"
    [ -n "$found" ] || found="$(fabric_ip "${hosts[$head]}" 2>/dev/null)" || found=""
    if [ -z "$found" ]; then
      dflash_fail "the fabric address is unknown, needs this node's cluster-network address (set " \
        "DFLASH_FABRIC_IP)"
    elif ! { ip -o addr show 2>/dev/null || true; } | grep -qF " $found/"; then
      dflash_fail "the fabric address $found is on no local interface, needs an address of this " \
        "node (set DFLASH_FABRIC_IP to this node's cluster-network address; ip -o addr lists " \
        "them)"
    fi
  fi
  # The route to the head node, then every port on another node this one connects to:
  # an answer in time (even a refusal: the service starts after this) is a path.
  local target peer addr port out rc
  local -A addrs=()
  for target in "${reach[@]}"; do
    peer="${target%%:*}"; port="${target#*:}"
    if [ -z "${addrs[$peer]+set}" ]; then
      addr="$(getent ahostsv4 "${hosts[$peer]}" 2>/dev/null | awk 'NR == 1 {print $1}')" || addr=""
      if [ -z "$addr" ]; then
        dflash_fail "node $peer (${hosts[$peer]}) is unresolvable, needs an address " \
          "(add the name " \
          "to DNS or /etc/hosts, or set launch.hosts to names every node resolves)"
        addrs[$peer]=-
      elif ! ip -o route get "$addr" >/dev/null 2>&1; then
        dflash_fail "the route to node $peer (${hosts[$peer]}, $addr) is none, needs a route " \
          "(connect this node to the cluster network)"
        addrs[$peer]=-
      else
        addrs[$peer]="$addr"
      fi
    fi
    [ "${addrs[$peer]}" != - ] || continue
    out="$(timeout "$connect_s" bash -c 'exec 3<>"/dev/tcp/$0/$1"' "${addrs[$peer]}" "$port" \
      2>&1)" && rc=0 || rc=$?
    if [ "$rc" = 124 ]; then
      dflash_fail "port $port on node $peer (${hosts[$peer]}) is closed (no answer in $connect_s " \
        "s), needs TCP from this node (open it between the nodes: firewall or security group)"
    elif [ "$rc" != 0 ] && [[ "$out" != *refused* ]]; then
      dflash_fail "port $port on node $peer (${hosts[$peer]}) is unreachable (${out##*: }), " \
          "needs " \
        "TCP from this node (open it between the nodes: firewall or security group)"
    fi
  done
  # Ports this node's services listen on: nothing may hold them already.
  for port in "${serves[@]}"; do
    if timeout "$connect_s" bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0"' "$port" >/dev/null 2>&1; then
      dflash_fail "port $port is in use, needs to be free for this run's service (stop what " \
        "listens there: ss -ltnp)"
    fi
  done
  # Free disk at the output folder (its nearest existing parent).
  if [ "$want_disk_gb" -gt 0 ]; then
    local dir="$disk_path"
    while [ ! -e "$dir" ] && [ "$dir" != "$(dirname -- "$dir")" ]; do
      dir="$(dirname -- "$dir")"
    done
    found="$(df -Pk -- "$dir" 2>/dev/null | awk 'NR == 2 {print int($4 / 1000000)}')"
    if [ -z "$found" ] || [ "$found" -lt "$want_disk_gb" ]; then
      dflash_fail "free disk at $disk_path is ${found:-unknown} GB, needs $want_disk_gb GB " \
        "($disk_why: free space or set launch.output_dir to a larger volume)"
    fi
  fi
  # Host memory available for the store.
  if [ "$want_memory_gib" -gt 0 ]; then
    found="$(free -b 2>/dev/null | awk '/^Mem:/ {print int($7 / 1073741824)}')"
    if [ -z "$found" ] || [ "$found" -lt "$want_memory_gib" ]; then
      dflash_fail "available host memory is ${found:-unknown} GiB, needs $want_memory_gib GiB " \
        "($memory_why: stop other processes or spread the run over more nodes)"
    fi
  fi
  return "$failed"
}"""


def _array(words: list[str]) -> str:
    """A bash array of the words, each quoted."""
    return "(" + " ".join(q(w) for w in words) + ")"


def program(pf: Preflight) -> str:
    """The bash function `dflash_preflight NODE [HOST...]` (HOSTs: every node's address,
    node 0 first; default the plan's), with FABRIC_IP_FUNCTION's fabric_ip beside it."""
    from .common import FABRIC_IP_FUNCTION

    pins_ = pf.pins
    packages = list(pins_.packages) if pins_ else []
    libraries = [f"{lib}={package}" for lib, package in RDMA_LIBRARIES] if pf.rdma else []
    nodes = len(pf.nodes)
    lines = [
        FABRIC_IP_FUNCTION,
        "# Pre-flight: checks this node before any model loads (`dflash-plan doctor` runs",
        "# the same); one line per failure, then a non-zero status.",
        "dflash_preflight() {   # $1: this node's index; then every node's address",
        '  local node="$1"; shift',
        f"  local hosts={_array(list(pf.hosts))}",
        '  [ "$#" = 0 ] || hosts=("$@")',
        f"  local probe={q(PROBE)}",
        f"  local packages={_array(packages)}",
        f"  local libraries={_array(libraries)}",
        f"  local want_python={q(pins_.python if pins_ else '')}",
        f"  local want_glibc={q(pins_.glibc if pins_ else '')}",
        f"  local want_cuda={q(str(pins_.cuda_major) if pins_ and pins_.cuda_major else '')}",
        f"  local cuda_why={q(f'torch {pins_.torch}' if pins_ and pins_.torch else '')}",
        f"  local pins_from={q(pins_.source if pins_ else '')}",
        f"  local disk_path={q(pf.disk_path)} disk_why={q(pf.disk_why)}",
        f"  local memory_why={q(pf.memory_why)} connect_s={CONNECT_TIMEOUT_S}",
        "  local label want_gpu want_words want_gpus want_free_mib binds",
        "  local want_memory_gib want_disk_gb",
        "  local head=0 serves=() reach=()",
        '  case "$node" in',
    ]
    for i, n in enumerate(pf.nodes):
        values = [
            f"label={q(n.label)}",
            f"want_gpu={q(n.gpu_name or '')}",
            f"want_words={_array((n.gpu_name or '').split())}",
            f"want_gpus={n.gpus}",
            f"want_free_mib={math.ceil(n.gpu_free_gib * GIB / 2**20)}",
            f"binds={int(n.binds)}",
            f"want_memory_gib={math.ceil(n.memory_gib)}",
            f"want_disk_gb={math.ceil(n.disk_gb)}",
            f"serves={_array([str(p) for p in n.serves])}",
            f"reach={_array([f'{node}:{port}' for node, port in n.reaches])}",
        ]
        if n.reaches:
            values.append(f"head={n.reaches[0][0]}")
        lines.append(f"    {i}) " + "; ".join(values) + " ;;")
    lines += [
        f"    *) echo \"preflight: node index must be 0-{nodes - 1}, got '$node'\" >&2; "
        "return 2 ;;",
        "  esac",
        _CHECKS,
    ]
    return "\n".join(lines)


def call(rank: str, hosts: str = "") -> str:
    """Run the pre-flight for node `rank` (a shell word), stopping the script on a failure.
    `hosts`: shell words giving every node's address (default: the plan's names)."""
    args = f"{rank} {hosts}".rstrip()
    return (
        f"dflash_preflight {args} || {{ echo 'preflight failed: fix the lines above "
        "(dflash-plan doctor runs the same checks)' >&2; exit 1; }"
    )


def block(ctx: Context, fmt: str, rank: str, hosts: str = "") -> str:
    """The pre-flight function and its call for node `rank`: what a script runs first."""
    return program(needs(ctx, fmt)) + "\n" + call(rank, hosts)


def script_block(ctx: Context, fmt: str, steps: bool = False) -> str:
    """What a script written by common.script runs first (its `preflight`). One node: the
    pre-flight of node 0. Several nodes, each running the script with NODE_RANK: that
    node's. `steps` (Slurm: the batch script runs on the first node only): one srun step
    per node of the allocation, every node's verdict before anything starts."""
    pf = needs(ctx, fmt)
    nodes = len(pf.nodes)
    if not steps:
        rank = (
            "0"
            if nodes == 1
            else (f'"${{NODE_RANK:?set NODE_RANK to the index of this node, 0-{nodes - 1}}}"')
        )
        return program(pf) + "\n" + call(rank)
    text = program(pf)
    end = terminator(text, "DFLASH_PREFLIGHT_EOF")
    lines = [
        "# Pre-flight: one step per node of the allocation, before any model loads.",
        f"preflight=\"$(cat <<'{end}'\n{text}\n{end}\n)\"",
        'mapfile -t preflight_nodes < <(scontrol show hostnames "$SLURM_JOB_NODELIST")',
        "preflight_steps=()",
    ]
    for i, node in enumerate(pf.nodes):
        gres = f" --gpus-per-node={node.gpus}" if node.gpus else ""
        lines += [
            f'srun --nodes=1 --ntasks=1 --overlap{gres} -w "${{preflight_nodes[{i}]}}" '
            f"bash -c \"$preflight\"$'\\n'"
            f'\'dflash_preflight "$@"\' preflight {i} "${{preflight_nodes[@]}}" &',
            "preflight_steps+=($!)",
        ]
    lines += [
        "preflight_ok=1",
        'for pid in "${preflight_steps[@]}"; do wait "$pid" || preflight_ok=0; done',
        '[ "$preflight_ok" = 1 ] || { echo "preflight failed: fix the lines above '
        '(dflash-plan doctor runs the same checks)" >&2; exit 1; }',
    ]
    return "\n".join(lines)


def pod_blocks(
    ctx: Context, fmt: str, hosts: tuple[str, str, str], trainers: int
) -> tuple[str, str, str]:
    """Kubernetes: the pre-flight each kind of pod runs first, (store, capture server,
    trainer). `hosts`: the store's, the first server's and the first trainer's DNS names.
    A pod checks its own GPUs (the device plugin's, counted from 0), the packages of the
    image, the address Mooncake binds (the pod's IP) and the ports it reaches."""
    # Three kinds of pod, whatever the node count: no per-node table.
    projection = project(ctx.plan, ctx.catalog)
    p = ctx.plan
    m = ctx.memory
    per_node = len(ctx.layout.drafters[ctx.layout.drafter_nodes[0]])
    store_ports = (MOONCAKE_RPC_PORT, MOONCAKE_METADATA_PORT)
    store = (0, MOONCAKE_RPC_PORT), (0, MOONCAKE_METADATA_PORT)
    master = ((2, p.launch.master_port),) if trainers > 1 else ()
    disk_gb, disk_why = _disk(projection, offline=False)
    kinds = (
        NodeNeeds("store pod", None, 0, 0.0, store_ports, (), False, 0.0, 0.0),
        NodeNeeds(
            "capture-server pod",
            _gpu_name(ctx, ctx.resolved.target_gpu.key),
            p.target.tp,
            m.weights_gib + m.kv_gib + m.activations_gib + m.capture_gib + m.runtime_gib,
            (p.launch.base_port,),
            store,
            True,
            _memory_gib(ctx, projection, 1, 0),
            0.0,
        ),
        NodeNeeds(
            "trainer pod",
            _gpu_name(ctx, ctx.resolved.drafter_gpu.key),
            per_node,
            projection.drafter.memory.needed_gb,
            (p.launch.master_port,) if trainers > 1 else (),
            ((1, p.launch.base_port), *store, *master),
            True,
            _memory_gib(ctx, projection, 0, per_node),
            disk_gb,
        ),
    )
    pods = Preflight(
        kinds, hosts, pins(ctx, fmt), _rdma(ctx, fmt), output_dir(p), disk_why, MEMORY_WHY
    )
    text = program(pods)
    store_block, server_block, trainer_block = (text + "\n" + call(str(i)) for i in range(3))
    return store_block, server_block, trainer_block
