#!/bin/sh
# Install the Debian 12 packages Samsa needs to build, test and be tried with kcat.
# Runs as root (or through sudo); does nothing when everything is already there.
set -eu
PKGS="build-essential autoconf automake libtool pkg-config python3
      libssl-dev zlib1g-dev libsnappy-dev liblz4-dev libzstd-dev libisal-dev
      check librdkafka-dev kcat procps"
# Cluster mode: ZooKeeper's C client, and the server itself (it pulls a JRE)
# for the tests, which start a real one on loopback; nftables and iproute2
# (ip netns, veth) for the network-partition tests.
PKGS="$PKGS zookeeper libzookeeper-mt-dev nftables iproute2"
# openssl (the command) makes the TLS tests' certificates.
PKGS="$PKGS openssl"
# clang and its libFuzzer/sanitizer runtime (libclang-rt-14-dev) for fuzz/
PKGS="$PKGS clang libclang-rt-14-dev"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
