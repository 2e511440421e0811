# shellcheck shell=sh
# The watchdog of a server (after leader_alive.sh), run in the run folder.
#   $1 lease seconds: the server's group is stopped when the lease file is older,
#   when `stop` appears, or when the server's leader is gone.
lease=$1
while [ ! -s server.pgid ]; do sleep 0.2; done
pg=$(cat server.pgid)
while leader_alive "$pg"; do
    if [ -e stop ]; then
        echo "asked to stop"
        break
    fi
    age=$(($(date +%s) - $(stat -c %Y lease 2>/dev/null || echo 0)))
    if [ "$age" -gt "$lease" ]; then
        echo "lease expired ${age}s ago: stopping"
        break
    fi
    sleep 1
done
kill -TERM -"$pg" 2>/dev/null
i=0
while kill -0 -"$pg" 2>/dev/null && [ "$i" -lt 20 ]; do
    sleep 0.5
    i=$((i + 1))
done
kill -KILL -"$pg" 2>/dev/null
echo stopped
