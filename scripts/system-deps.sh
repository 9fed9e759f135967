#!/usr/bin/env bash
# Debian packages the test suite uses for real: PostgreSQL (server binaries only; the
# tests create and stop their own cluster on loopback), Redis (`redis-server`, for the
# LangGraph Server cluster; started by the tests on loopback) and Graphviz (`dot` draws
# the graphs in the notebooks).
set -euo pipefail
pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }
missing=()
if [ -z "$(pg_bin)" ] || [ ! -x "$(pg_bin)/initdb" ]; then missing+=(postgresql); fi
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v dot >/dev/null 2>&1 || missing+=(graphviz)
if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    echo "installing Debian packages: ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
    # the tests run their own cluster; the packaged one is not needed
    $SUDO service postgresql stop >/dev/null 2>&1 || true
    $SUDO service redis-server stop >/dev/null 2>&1 || true
fi
echo "postgresql: $(pg_bin)"
echo "redis: $(command -v redis-server)"
echo "graphviz: $(command -v dot)"
