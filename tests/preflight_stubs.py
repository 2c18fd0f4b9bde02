"""Stub commands for a node the pre-flight (model/launch/preflight.py) finds good, and the
knobs that inject each fault; shared by the tests that run generated scripts."""

from __future__ import annotations

import re
import shlex

# A good node for the pre-flight (model/launch/preflight.py) unless a test sets a fault:
# STUB_GPU_NAME (default: every GPU name the script asks for), STUB_GPU_FREE_MIB,
# STUB_DRIVER_CUDA, STUB_PYTHON, STUB_GLIBC, STUB_MISSING (packages or libraries, spaces),
# STUB_VERSIONS (name=version, spaces), STUB_LOCAL_ADDR (the node's address; default the
# one it binds), STUB_NO_ROUTE (addresses), STUB_UNRESOLVED (names), STUB_CLOSED_PORTS and
# STUB_BUSY_PORTS (ports), STUB_DISK_KB, STUB_MEM_B.
PREFLIGHT_STUBS = {
    "nvidia-smi": (
        '#!/bin/bash\nif [ "$#" = 0 ]; then echo "| Driver Version: 580.65.06  CUDA Version: '
        '${STUB_DRIVER_CUDA:-13.0} |"; exit 0; fi\nfor i in $(seq 1 16); do '
        "echo \"NVIDIA ${STUB_GPU_NAME//$'\\n'/ }, ${STUB_GPU_FREE_MIB:-1000000}\"; done\n"
    ),
    "ip": (
        '#!/bin/bash\ncase "$*" in\n  "-o addr show") echo "2: eth0    inet '
        "${STUB_LOCAL_ADDR:-${MC_TCP_BIND_ADDRESS:-${DFLASH_FABRIC_IP:-10.0.0.0}}}/24 brd "
        '10.0.0.255 scope global eth0" ;;\n'
        '  "-o route get "*) for a in ${STUB_NO_ROUTE:-}; do [ "$a" = "$4" ] && '
        '{ echo "RTNETLINK answers: Network is unreachable" >&2; exit 2; }; done\n'
        '    echo "$4 dev eth0 src ${DFLASH_FABRIC_IP:-10.0.0.0}" ;;\n  *) exit 1 ;;\nesac\n'
    ),
    # timeout SECONDS bash -c 'exec 3<>/dev/tcp/...' [HOST] PORT: the connection's outcome;
    # any other command runs as it is.
    "timeout": (
        '#!/bin/bash\nwhile [[ "$1" == -* ]]; do shift; done; shift   # options, duration\n'
        'case "$3" in *"/dev/tcp/"*) ;; *) exec "$@" ;; esac\n'
        'port="${@: -1}"\nfor p in ${STUB_CLOSED_PORTS:-}; do [ "$p" = "$port" ] '
        '&& exit 124; done\nfor p in ${STUB_BUSY_PORTS:-}; do [ "$p" = "$port" ] && exit 0; '
        'done\necho "bash: connect: Connection refused" >&2; exit 1\n'
    ),
    "df": (
        '#!/bin/bash\necho "Filesystem 1024-blocks Used Available Capacity Mounted on"\n'
        'echo "/dev/sda1 100 0 ${STUB_DISK_KB:-100000000000} 0% /"\n'
    ),
    "free": (
        '#!/bin/bash\necho "total used free shared buff/cache available"\n'
        'echo "Mem: 1 1 1 1 1 ${STUB_MEM_B:-10000000000000}"\n'
    ),
}
# python -I -c PROBE ARGS: the pre-flight's question, answered for a good node (not
# recorded: it is no model-loading call).
PYTHON_PROBE = (
    'if [ "$1" = -I ]; then\n  echo "python ${STUB_PYTHON:-3.11.9}"; echo "glibc '
    '${STUB_GLIBC:-2.35}"; echo "torch-cuda ${STUB_TORCH_CUDA:-13.0}"\n'
    '  for a in "${@:4}"; do name="${a%%[=>]=*}"; name="${name%% @ *}"; version="${a#*[=>]=}"\n'
    '    [ "$version" != "$a" ] && [ -n "$version" ] || version=1.0\n'
    '    for v in ${STUB_VERSIONS:-}; do [ "${v%%=*}" = "$name" ] && version="${v#*=}"; done\n'
    '    for m in ${STUB_MISSING:-}; do [ "$m" = "$name" ] && version=-; done\n'
    '    case "$name" in lib*) echo "library $name ${version/1.0/ok}" ;; '
    '*) echo "package $name $version" ;; esac\n  done\n  exit 0\nfi\n'
)


def wanted_gpus(text: str) -> str:
    """Every GPU name the script's pre-flights ask for (a good node's nvidia-smi shows
    them all), read from each per-node table as bash reads it (names may hold quotes)."""
    names = set()
    for row in re.findall(r"(?ms)^    \d+\) (label=.*?) ;;$", text):
        lexer = shlex.shlex(row, posix=True, punctuation_chars=";()")
        lexer.whitespace_split = True
        names |= {w.removeprefix("want_gpu=") for w in lexer if w.startswith("want_gpu=")}
    return " ".join(sorted(n for n in names if n))


# getent ahostsv4 NAME for a pod's DNS name: every name is 10.0.0.200 unless
# STUB_UNRESOLVED names it.
GETENT_ANY = (
    '#!/bin/bash\nfor n in ${STUB_UNRESOLVED:-}; do [ "$n" = "$2" ] && exit 2; done\n'
    'echo "10.0.0.200 STREAM $2"\n'
)
