#!/bin/sh
# Builds the block tracer: its BPF object against this kernel's BTF (CO-RE: it loads on other kernels too),
# a skeleton of it, and the loader linked with libbpf. Run by the install step (setup.py); OUT is a folder.
#   sh build.sh OUT
# Needs clang, bpftool and libbpf-dev (Debian: apt-get install -y clang bpftool libbpf-dev).
set -eu
out=$1
src=$(cd "$(dirname "$0")" && pwd)
for tool in clang bpftool; do
  command -v "$tool" >/dev/null 2>&1 || { echo "$tool is not installed" >&2; exit 1; }
done
[ -r /sys/kernel/btf/vmlinux ] || { echo "this kernel has no BTF (/sys/kernel/btf/vmlinux)" >&2; exit 1; }
[ -r /usr/include/bpf/libbpf.h ] || { echo "libbpf-dev is not installed" >&2; exit 1; }
case $(uname -m) in
  x86_64) arch=x86 ;; aarch64) arch=arm64 ;; s390x) arch=s390 ;; ppc64le) arch=powerpc ;; riscv64) arch=riscv ;;
  *) arch=$(uname -m) ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bpftool btf dump file /sys/kernel/btf/vmlinux format c > "$tmp/vmlinux.h"
clang -g -O2 -target bpf -D__TARGET_ARCH_$arch -I"$tmp" -I"$src" -c "$src/blktrace.bpf.c" -o "$tmp/blktrace.bpf.o"
bpftool gen skeleton "$tmp/blktrace.bpf.o" name blktrace_bpf > "$tmp/blktrace.skel.h"
mkdir -p "$out"
clang -O2 -Wall -I"$tmp" -I"$src" "$src/blktrace.c" -lbpf -o "$out/iosched-blktrace.new"
mv "$out/iosched-blktrace.new" "$out/iosched-blktrace"
