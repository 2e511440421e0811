# shellcheck shell=sh
# leader_alive PID: whether the process PID runs (and is no zombie). Put in front of the
# scripts that watch a server: a server whose main process crashed may leave children
# behind, so its group is stopped as soon as its leader is gone.
leader_alive() {
    state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
    [ -d /proc/self ] || {
        kill -0 "$1" 2>/dev/null
        return
    }
    [ -n "$state" ] && [ "$state" != Z ]
}
