#!/bin/sh
# Communicators across hosts made on this machine: 3 network namespaces,
# each with its own address on a bridge (veth pairs), one rank in each,
# started by mpirun through a launch agent (test/comm_netns_agent.sh) that
# enters the namespace a "host" (its address) names, the way ssh would
# reach another machine. Checks:
#   grid     every collective x dtype x count between the 3 hosts, over
#            their addresses (tcp BTL on the bridge's subnet only)
#   linkcut  a host's link is cut (ip link set down) while the ranks
#            all-reduce: every rank gets an error within the timeout, none
#            hangs
# Skipped, saying why, where network namespaces cannot be made (not root,
# no ip, a container without CAP_SYS_ADMIN); Open MPI missing skips as in
# test_comm_mpi.sh.
set -u
b=$(cd "${LD_LIBRARY_PATH%%:*}/.." && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)
rank=$b/test/comm_rank
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

if ! command -v mpirun >/dev/null 2>&1; then
  if installed openmpi-bin; then echo "FAILED: openmpi-bin is installed but mpirun is not on PATH"; exit 1; fi
  echo "SKIP: mpirun not found (Debian: openmpi-bin libopenmpi-dev)"; exit 77
fi
case "${BP_UNDER_SANITIZER:-}" in
  ?*) echo "SKIP: under sanitizers (Open MPI's own allocations read as leaks)"; exit 77 ;;
esac
[ "$(id -u)" = 0 ] || { echo "SKIP: network namespaces need root (ip netns add)"; exit 77; }
command -v ip >/dev/null 2>&1 || { echo "SKIP: no ip command (Debian: iproute2)"; exit 77; }

# Names and a subnet of this run's own, so concurrent runs do not collide.
id=$(( $$ % 250 + 1 ))
pre=bpc$$
net=10.213.$id
br=${pre}br
tmp=$(mktemp -d)
cleanup() {
  for i in 1 2 3; do ip netns del "${pre}n$i" 2>/dev/null; ip link del "${pre}h$i" 2>/dev/null; done
  ip link del "$br" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

if ! ip netns add "${pre}n1" 2>"$tmp/err"; then
  echo "SKIP: network namespaces are not permitted here: $(cat "$tmp/err")"; exit 77
fi
setup() {
  ip link add "$br" type bridge || return 1
  ip addr add "$net.254/24" dev "$br" && ip link set "$br" up || return 1
  for i in 1 2 3; do
    [ "$i" = 1 ] || ip netns add "${pre}n$i" || return 1
    ip link add "${pre}h$i" type veth peer name "${pre}p$i" || return 1
    ip link set "${pre}p$i" netns "${pre}n$i" || return 1
    ip link set "${pre}h$i" master "$br" && ip link set "${pre}h$i" up || return 1
    ip netns exec "${pre}n$i" ip addr add "$net.$i/24" dev "${pre}p$i" || return 1
    ip netns exec "${pre}n$i" ip link set "${pre}p$i" up || return 1
    ip netns exec "${pre}n$i" ip link set lo up || return 1
  done
}
if ! setup 2>"$tmp/err"; then
  echo "SKIP: cannot build the namespaces' network (bridge, veth): $(cat "$tmp/err")"; exit 77
fi
for i in 1 2 3; do echo "$net.$i slots=1"; done > "$tmp/hosts"

root=""
[ "$(id -u)" = 0 ] && root="--allow-run-as-root"
# Every host is an address mpirun does not own, so it launches each one's
# daemon through the agent, which enters the namespace owning that address.
mpi() {
  BP_NETNS_PREFIX=$pre BP_NETNS_NET=$net timeout "$1" mpirun $root -np 3 --hostfile "$tmp/hosts" \
    --mca plm_rsh_agent "$here/test/comm_netns_agent.sh" --mca plm_rsh_no_tree_spawn 1 \
    --mca btl tcp,self --mca btl_tcp_if_include "$net.0/24" --mca oob_tcp_if_include "$net.0/24" \
    --mca mpi_yield_when_idle 1 \
    -x BACKPLANE_PLUGIN_PATH -x LD_LIBRARY_PATH -x BACKPLANE_PROBE_CACHE -x BP_COMM_READY_FILE \
    "$rank" "$2" 2>&1
}

fail=0
start=$(date +%s)
out=$(mpi 120 grid)
oks=$(printf '%s\n' "$out" | grep -c "^rank [0-9]: grid: ok")
if [ "$oks" -eq 3 ]; then
  echo "ok: grid across 3 namespaces ($(( $(date +%s) - start )) s)"
else
  echo "FAILED: grid across 3 namespaces: $oks of 3 ranks ok"; printf '%s\n' "$out" | tail -30; fail=1
fi

# linkcut: once rank 0 has written the ready file, host 3's link goes down.
export BP_COMM_READY_FILE=$tmp/ready
mpi 90 linkcut > "$tmp/cut.out" &
pid=$!
for _ in $(seq 1 600); do [ -e "$tmp/ready" ] && break; sleep 0.1; done
if [ -e "$tmp/ready" ]; then
  ip link set "${pre}h3" down
  # The ranks report within the timeout; then the link comes back so that
  # mpirun can wind the job down instead of waiting on TCP for minutes.
  for _ in $(seq 1 150); do
    [ "$(grep -c '^rank [0-9]: linkcut: error' "$tmp/cut.out")" -ge 3 ] && break; sleep 0.1
  done
  ip link set "${pre}h3" up
fi
wait $pid
errs=$(grep -c '^rank [0-9]: linkcut: error' "$tmp/cut.out")
if [ -e "$tmp/ready" ] && [ "$errs" -eq 3 ] && ! grep -q FAILED "$tmp/cut.out"; then
  echo "ok: a cut link gives every rank an error:"; grep '^rank [0-9]: linkcut: error' "$tmp/cut.out" | sed 's/^/  /'
else
  echo "FAILED: linkcut: $errs of 3 ranks reported an error"; tail -30 "$tmp/cut.out"; fail=1
fi
exit $fail
