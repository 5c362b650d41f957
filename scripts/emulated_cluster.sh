#!/usr/bin/env bash
# An emulated cluster on this machine: HOSTS network namespaces ("hosts") joined by a bridge in
# a namespace of its own, each host's link shaped to RATE in both directions (tc tbf; plus DELAY
# with tc netem where the kernel has it), RANKS ranks per host, one ringgrad-run per host
# (--nnodes, --node-rank). Runs all_reduce_perf with ring, tree, hd and hier side by side after
# --calibrate, so each row shows the measured time beside the cost model's ("model" column).
# Needs root and iproute2; removes everything it made on exit; says why and exits 0 where
# namespaces cannot be made. Addresses are 10.203.0.x, inside those namespaces only.
#   scripts/emulated_cluster.sh [BUILD_DIR] [HOSTS] [RANKS] [RATE] [DELAY] [MAXBYTES]
#   defaults:                    build      2       2       1gbit  100us   16M
# ALGOS names the algorithms; PERF_ARGS, when set, replaces the sweep's flags (-b 8 -e MAXBYTES
# -f 8 -n 5 -w 1), as bench/sim/sim_vs_real.py does to add --json.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build} hosts=${2:-2} ranks=${3:-2} rate=${4:-1gbit} delay=${5:-100us} max=${6:-16M}
algos=${ALGOS:-ring,tree,hd,hier,auto}
read -r -a sweep <<< "${PERF_ARGS:--b 8 -e $max -f 8 -n 5 -w 1}"
prefix=rgc$$
switch=${prefix}sw
for tool in ip tc; do
  command -v "$tool" > /dev/null || { echo "emulated_cluster: skipped: '$tool' not found (Debian: iproute2)"; exit 0; }
done
[ -x "$build/bin/all_reduce_perf" ] || { echo "emulated_cluster: $build/bin/all_reduce_perf missing: run scripts/build.sh" >&2; exit 2; }

pids=()  # the ringgrad-run of every host
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2> /dev/null || true; done  # they stop their ranks
  for pid in "${pids[@]}"; do wait "$pid" 2> /dev/null || true; done
  for i in $(seq 0 $((hosts - 1))); do ip netns del "${prefix}h$i" 2> /dev/null || true; done
  ip netns del "$switch" 2> /dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP
if ! ip netns add "$switch" 2> /dev/null; then
  echo "emulated_cluster: skipped: cannot create network namespaces here (needs root)"
  exit 0
fi
ip -n "$switch" link add br0 type bridge
ip -n "$switch" link set br0 up

# shape DEV in namespace NS: netem (delay and rate) where the kernel has it, else tbf (rate only).
shaping=""
shape() {
  if ip netns exec "$1" tc qdisc add dev "$2" root netem delay "$delay" rate "$rate" 2> /dev/null; then
    shaping="netem: $rate, $delay each way"
  else
    ip netns exec "$1" tc qdisc add dev "$2" root tbf rate "$rate" burst 256kb latency 100ms
    shaping="tbf: $rate each way; no added delay (this kernel has no netem)"
  fi
}
for i in $(seq 0 $((hosts - 1))); do
  ns=${prefix}h$i
  ip netns add "$ns"
  ip link add eth0 netns "$ns" type veth peer name "port$i" netns "$switch"
  ip -n "$ns" addr add "10.203.0.$((i + 1))/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
  ip -n "$switch" link set "port$i" master br0 up
  shape "$ns" eth0            # host -> switch
  shape "$switch" "port$i"    # switch -> host
done

port=$((29000 + $$ % 1000))
# One secret for the hosts' launchers to share: a job of several nodes carries it (docs/transport.md).
RINGGRAD_JOB_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
export RINGGRAD_JOB_TOKEN
echo "# emulated cluster: $hosts hosts x $ranks ranks, links $shaping; $(nproc) CPUs for all $((hosts * ranks)) ranks"
for i in $(seq 1 $((hosts - 1))); do
  ip netns exec "${prefix}h$i" "$build/bin/ringgrad-run" --nnodes "$hosts" --node-rank "$i" --nproc-per-node "$ranks" \
    --master-addr 10.203.0.1 --master-port "$port" \
    "$build/bin/all_reduce_perf" "${sweep[@]}" -a "$algos" --calibrate > /dev/null &
  pids+=($!)
done
ip netns exec "${prefix}h0" "$build/bin/ringgrad-run" --nnodes "$hosts" --node-rank 0 --nproc-per-node "$ranks" \
  --master-addr 10.203.0.1 --master-port "$port" \
  "$build/bin/all_reduce_perf" "${sweep[@]}" -a "$algos" --calibrate &
pids+=($!)
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
pids=()
exit "$status"
