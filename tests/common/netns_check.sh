#!/bin/sh
# Whether network namespaces joined to this one by veth pairs and a bridge
# can be made here, found by making them (and removing them). Root with
# `ip netns list` working is not enough: a container may run as root
# without CAP_SYS_ADMIN / CAP_NET_ADMIN.
# Exit 0 when they can; else prints why on one line and exits 1.
if [ "$(id -u)" != 0 ]; then
  echo "needs root (running as uid $(id -u))"; exit 1
fi
if ! command -v ip >/dev/null 2>&1; then
  echo "no ip command (install iproute2)"; exit 1
fi
tag=$$
ns=podscope-probe-$tag; a=pprb${tag}a; b=pprb${tag}b; br=pprb${tag}br
cleanup() {
  ip link del $a >/dev/null 2>&1
  ip link del $br >/dev/null 2>&1
  ip netns del $ns >/dev/null 2>&1
}
trap cleanup EXIT
fail() {  # what, output
  echo "$1 failed: $(echo "$2" | head -1) (a container without CAP_SYS_ADMIN / CAP_NET_ADMIN?)"
  exit 1
}
out=$(ip netns add $ns 2>&1) || fail "ip netns add" "$out"
out=$(ip link add $a type veth peer name $b 2>&1) || fail "making a veth pair" "$out"
out=$(ip link set $b netns $ns 2>&1) || fail "moving a veth end into the namespace" "$out"
out=$(ip netns exec $ns ip link set lo up 2>&1) || fail "ip netns exec" "$out"
out=$(ip link add $br type bridge 2>&1) || fail "making a bridge" "$out"
exit 0
