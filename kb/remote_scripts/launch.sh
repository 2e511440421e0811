# shellcheck shell=sh
# Start a framework's server in a run folder, under a watchdog.
#   $1 run folder, $2 lease seconds, then the server's argv (`env NAME=value ... program args`).
#   $WATCHDOG: the watchdog's script (watchdog.sh).
# The server gets its own session, so its pid is its process group; the watchdog, in
# another session, kills that group when the lease file goes stale or `stop` appears.
# Prints the server's process group id.
set -e
run=$1
lease=$2
shift 2
mkdir -p "$run"
cd "$run"
rm -f stop server.pgid
touch lease
# shellcheck disable=SC2016  # $$ is the new shell's pid: expanded by that shell
setsid sh -c 'echo $$ > server.pgid; exec "$@"' fixgraph-server "$@" \
    > server.log 2>&1 < /dev/null &
setsid sh -c "$WATCHDOG" fixgraph-watchdog "$lease" > watchdog.log 2>&1 < /dev/null &
i=0
while [ ! -s server.pgid ] && [ "$i" -lt 50 ]; do
    sleep 0.1
    i=$((i + 1))
done
cat server.pgid
