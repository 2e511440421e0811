# shellcheck shell=sh
# Stop a server now (TERM, then KILL after 10 s); its watchdog sees `stop` and ends too.
#   $1 run folder.
cd "$1" || exit 0
touch stop
pg=$(cat server.pgid 2>/dev/null) || exit 0
kill -TERM -"$pg" 2>/dev/null
i=0
while kill -0 -"$pg" 2>/dev/null && [ "$i" -lt 20 ]; do
    sleep 0.5
    i=$((i + 1))
done
kill -KILL -"$pg" 2>/dev/null
exit 0
