#!/bin/sh
# Launcher for the Temporal time-skipping test server (Java artifact
# io.temporal:temporal-test-server, resolved by scripts/bootstrap.mjs --test into
# .tools/temporal-test-server/lib).
#
# @temporalio/testing runs this file as an "existing-path" executable with the
# arguments of the official native test server: `<port> [extraArgs...]`. They are
# passed through unchanged to io.temporal.testserver.TestServer, whose usage is
# `<port> [--enable-time-skipping]`. Without the flag the server starts with time
# skipping locked, exactly like the official binary; the SDK's TimeSkippingClient
# unlocks it while a test awaits a workflow result.
#
# `exec` matters: the SDK stops the server by killing the process it started, so
# the JVM must be that process (a shell left in between would orphan the JVM).
#
# Start-up: the SDK polls the port every 100 ms, 50 times (~5 s), then gives up.
# The JVM flags below keep start-up well inside that (see docs/toolchain.md):
# C1-only JIT, serial GC, and the class-data-sharing archive that bootstrap builds.
#
# Environment overrides:
#   TEMPORAL_TEST_SERVER_LIB   folder of the jars (default: <repo>/.tools/temporal-test-server/lib)
#   TEMPORAL_TEST_SERVER_CDS   CDS archive (default: <lib>/../test-server.jsa; ignored if missing)
#   TEMPORAL_TEST_SERVER_CDS_DUMP  (bootstrap only) write a new CDS archive to this path at exit
#   JAVA_HOME / JAVA           which java to run (default: $JAVA_HOME/bin/java, else java on PATH)
#   TEMPORAL_TEST_SERVER_JAVA_OPTS  extra JVM options, appended last
set -eu

here=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)
root=$(CDPATH= cd -- "$here/../.." && pwd)
lib=${TEMPORAL_TEST_SERVER_LIB:-"$root/.tools/temporal-test-server/lib"}

if [ -n "${JAVA:-}" ]; then
  java=$JAVA
elif [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then
  java="$JAVA_HOME/bin/java"
else
  java=java
fi

if ! ls "$lib"/temporal-test-server-*.jar >/dev/null 2>&1; then
  echo "temporal-test-server: no jars in $lib; run: node scripts/bootstrap.mjs --test" >&2
  exit 1
fi

cds=${TEMPORAL_TEST_SERVER_CDS:-"$(dirname -- "$lib")/test-server.jsa"}
share=""
if [ -n "${TEMPORAL_TEST_SERVER_CDS_DUMP:-}" ]; then
  # Training run (scripts/bootstrap.mjs): write the classes loaded until exit to an archive.
  share="-XX:ArchiveClassesAtExit=$TEMPORAL_TEST_SERVER_CDS_DUMP"
elif [ -f "$cds" ]; then
  # -Xshare:auto: a stale or mismatched archive (other JDK, changed jars) is ignored, never fatal.
  share="-XX:SharedArchiveFile=$cds -Xshare:auto -Xlog:cds=off -Xlog:cds+dynamic=off"
fi

# shellcheck disable=SC2086 # $share and the extra options are word lists
exec "$java" \
  -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xss512k -XX:-UsePerfData \
  $share ${TEMPORAL_TEST_SERVER_JAVA_OPTS:-} \
  -cp "$lib/*" io.temporal.testserver.TestServer "$@"
