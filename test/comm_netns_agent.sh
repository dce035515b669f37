#!/bin/sh
# The launch agent test_comm_netns.sh gives mpirun (plm_rsh_agent): called
# as ssh would be, "AGENT HOST COMMAND...", it runs COMMAND inside the
# network namespace that owns HOST's address ($BP_NETNS_NET.N belongs to
# namespace ${BP_NETNS_PREFIX}nN), with the caller's environment.
host=$1
shift
case "$host" in
  "$BP_NETNS_NET".[1-9]) ns=${BP_NETNS_PREFIX}n${host##*.} ;;
  *) echo "comm_netns_agent: no namespace for host '$host'" >&2; exit 255 ;;
esac
exec ip netns exec "$ns" /bin/sh -c "$*"
