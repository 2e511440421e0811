# shellcheck shell=sh
# Renew a server's lease (after leader_alive.sh). First line: alive or gone; then the
# tail of the server's log.
#   $1 run folder, $2 bytes of log tail.
cd "$1" || {
    echo gone
    exit 0
}
touch lease
pg=$(cat server.pgid 2>/dev/null)
if [ -n "$pg" ] && leader_alive "$pg"; then echo alive; else echo gone; fi
tail -c "$2" server.log 2>/dev/null
