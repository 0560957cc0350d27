#!/usr/bin/env bash
# The CUDA half of the AOTInductor checks, for a machine with an NVIDIA GPU (none here): run from
# anywhere as `bash benchmarks/device_check.sh [OUT]`. Needs a CUDA build of torch 2.13 with
# executorch beside it, g++ (or CXX), cmake and the CUDA toolkit that libtorch's CMake package
# finds. Each step prints one line; the first failure stops the script with its step named.
#
#   1. migrate verify --aoti --device cuda on a small archive (a Linear-ReLU-Linear, traced):
#      the package compiled for the GPU, checked against the archive on the GPU, with --bench;
#   2. migrate convert --aoti --device cuda: model.aoti.pt2 compiled for the GPU, checked;
#   3. the AOTInductor tests, the sample C++ server built and run before and after the
#      migration on the GPU (tests/verify/test_aoti_server.py with MIGRATE_TEST_DEVICE=cuda).
# A few minutes in all on a dedicated machine (each package compiles in well under a minute).
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD" NO_COLOR=1
OUT="${1:-$(mktemp -d -t migrate-device-check-XXXX)}"
mkdir -p "$OUT"
step() { echo "== $*"; }
fail() { echo "device check failed at: $*" >&2; exit 1; }

step "environment"
python - <<'PY' || fail "environment (a CUDA torch, executorch, g++, cmake)"
import shutil, os, torch
assert torch.cuda.is_available(), "torch sees no CUDA device"
import executorch  # noqa: F401
for tool in (os.environ.get("CXX", "g++"), "cmake"):
    assert shutil.which(tool), f"{tool} not found"
print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, CUDA {torch.version.cuda}")
PY

step "a small TorchScript archive"
python - "$OUT" <<'PY' || fail "archive"
import sys, torch
from torch import nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).eval()
torch.jit.trace(model, torch.randn(2, 4)).save(f"{sys.argv[1]}/model.pt")
PY

step "verify --aoti --device cuda"
python -m migrate verify "$OUT/model.pt" --input-shape 2x4 --dynamic-batch 16 --device cuda \
  --aoti --bench --out "$OUT/verify" --format json > "$OUT/verify.json" || fail "verify (see $OUT/verify.json)"
python - "$OUT/verify.json" <<'PY' || fail "verify's aoti cell on cuda"
import json, sys
report = json.load(open(sys.argv[1]))
cells = [c for c in report["results"] if c["candidate"] == "aoti" and c["device"] == "cuda"]
assert cells and cells[0]["status"] == "pass", cells
c = cells[0]
print(f"aoti on cuda: pass, max abs {c['max_abs']}, {c['latency_ms']:.3f} ms vs TorchScript "
      f"{c['reference_latency_ms']:.3f} ms")
PY

step "convert --aoti --device cuda"
python -m migrate convert "$OUT/model.pt" --input-shape 2x4 --dynamic-batch 16 --aoti \
  --device cuda -o "$OUT/convert" || fail "convert"
test -f "$OUT/convert/model.aoti.pt2" || fail "convert wrote no package"

step "the AOTInductor tests and the sample C++ server, on cuda"
MIGRATE_TEST_DEVICE=cuda python -m pytest -q -p no:cacheprovider --slow \
  tests/verify/test_aoti.py tests/verify/test_aoti_server.py tests/test_cpp_aoti.py || fail "tests"
echo "device check passed; artifacts in $OUT"
