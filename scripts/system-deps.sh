#!/usr/bin/env bash
# Debian packages the test suite starts for real: PostgreSQL (server binaries only;
# the tests create and stop their own cluster on loopback).
set -euo pipefail
pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }
if [ -z "$(pg_bin)" ] || [ ! -x "$(pg_bin)/initdb" ]; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq postgresql >/dev/null
    # the tests run their own cluster; the packaged one is not needed
    $SUDO service postgresql stop >/dev/null 2>&1 || true
fi
echo "postgresql: $(pg_bin)"
