# Sourced by the shell tests that run a job on several hosts: network
# namespaces on one bridge, skipped (exit 77) where they cannot be made
# unless PODSCOPE_REQUIRE_NETNS=1 makes that a failure (netns_check.sh says
# why).
#
#   . tests/common/netns_hosts.sh
#   netns_hosts_require                 # skip or fail here when impossible
#   netns_hosts_make N PREFIX BASE      # hosts 0..N-1
#   netns_host_ns I    netns_host_if I    netns_host_ip I
#   netns_hosts_remove                  # call it from the script's EXIT trap
# PREFIX (two letters) names the links; the bridge is at 10.S.0.1 and host
# i at 10.S.0.(i+2), with S = BASE + pid % 50, so that tests running at
# once with other BASEs never share a subnet.
# The caller's folder is two below tests/ (tests/runtime/x/). Every
# variable here starts with netns_.
netns_hosts_check=${netns_hosts_check:-$(dirname "$0")/../../common/netns_check.sh}

netns_hosts_require() {
  if ! why=$(sh "$netns_hosts_check" 2>&1); then
    if [ "${PODSCOPE_REQUIRE_NETNS:-}" = 1 ]; then
      echo "PODSCOPE_REQUIRE_NETNS=1 but network namespaces cannot be made here: $why"; exit 1
    fi
    echo "SKIP: network namespaces cannot be made here: $why; set PODSCOPE_REQUIRE_NETNS=1 to make this a failure"
    exit 77
  fi
}

netns_hosts_make() {  # count, prefix, subnet base
  netns_hosts_n=$1; netns_hosts_prefix=$2
  netns_hosts_tag=$(( $$ % 100000 ))
  netns_hosts_subnet=$(( $3 + $$ % 50 ))
  netns_hosts_br=${2}br$netns_hosts_tag
  ip link add "$netns_hosts_br" type bridge
  ip addr add 10.$netns_hosts_subnet.0.1/24 dev "$netns_hosts_br"
  ip link set "$netns_hosts_br" up
  netns_i=0
  while [ $netns_i -lt "$netns_hosts_n" ]; do
    netns_ns=$(netns_host_ns $netns_i)
    netns_out=${2}h${netns_hosts_tag}x$netns_i
    netns_in=$(netns_host_if $netns_i)
    ip netns add "$netns_ns"
    ip link add "$netns_out" type veth peer name "$netns_in"
    ip link set "$netns_in" netns "$netns_ns"
    ip link set "$netns_out" master "$netns_hosts_br"
    ip link set "$netns_out" up
    ip netns exec "$netns_ns" ip addr add "$(netns_host_ip $netns_i)/24" dev "$netns_in"
    ip netns exec "$netns_ns" ip link set "$netns_in" up
    ip netns exec "$netns_ns" ip link set lo up
    netns_i=$((netns_i + 1))
  done
}

netns_host_ns() { echo "podscope-${netns_hosts_prefix}$netns_hosts_tag-$1"; }
netns_host_if() { echo "${netns_hosts_prefix}n${netns_hosts_tag}x$1"; }
netns_host_ip() { echo "10.$netns_hosts_subnet.0.$(( $1 + 2 ))"; }

netns_hosts_remove() {
  [ -n "${netns_hosts_n:-}" ] || return 0
  netns_i=0
  while [ $netns_i -lt "$netns_hosts_n" ]; do
    ip link del "${netns_hosts_prefix}h${netns_hosts_tag}x$netns_i" >/dev/null 2>&1 || true
    ip netns del "$(netns_host_ns $netns_i)" >/dev/null 2>&1 || true
    netns_i=$((netns_i + 1))
  done
  ip link del "$netns_hosts_br" >/dev/null 2>&1 || true
  netns_hosts_n=
}
