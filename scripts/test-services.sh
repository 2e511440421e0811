#!/usr/bin/env bash
# Start throw-away PostgreSQL, Redis and sshd for the test suite, run a command
# against them, then stop everything again.
#
#   scripts/test-services.sh run -- CMD...   start, export the URLs, run CMD, stop; exits with CMD's code
#   scripts/test-services.sh check           report missing system packages (exit 1 if any)
#   scripts/test-services.sh up              start and print `export X=...` lines to eval
#   scripts/test-services.sh down DIR        stop what `up` started in DIR and remove DIR
#
# Every service is a plain process on 127.0.0.1 on a free port, with its data,
# logs and keys in one temp folder, so several copies can run side by side.
# As root, two more sshds run as test hosts, each in a network namespace of its
# own (10.200.N.2:22, see "test hosts in namespaces" below).
#
# Environment knobs:
#   KEEP_TEST_SERVICES=1             keep the temp folder (logs, keys) after `run`
#   TEST_SERVICES_NO_INSTALL=1       never call apt-get; report what is missing instead
#   TEST_SERVICES_PRETEND_MISSING=.. space-separated Debian packages to treat as missing
#                                    (exercises the install/report path on a complete machine)
#   TEST_SERVICES_NO_NETNS=1         make no test hosts in network namespaces (an error under CI=true)
set -euo pipefail
shopt -s inherit_errexit

readonly SSH_TEST_USER_ROOT="fixgraph-test"
readonly MARKER=".fixgraph-test-services"
readonly START_ATTEMPTS=3

SCRIPT_DIR="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(dirname -- "$SCRIPT_DIR")"
TMP=""
CHILD_PID=""

log() { printf 'test-services: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
is_root() { [[ "$(id -u)" == 0 ]]; }

# ---------------------------------------------------------------- packages

pg_version_of() { basename -- "$(dirname -- "$1")"; }

# The bin folder of the newest installed PostgreSQL server >= 15; empty if none.
pg_bindir() {
    local initdb dir ver best="" best_ver=0
    for initdb in /usr/lib/postgresql/*/bin/initdb; do
        dir="$(dirname -- "$initdb")"
        ver="$(pg_version_of "$dir")"
        [[ -x "$initdb" && -x "$dir/pg_ctl" && "$ver" =~ ^[0-9]+$ ]] || continue
        if (( ver >= 15 && ver > best_ver )); then best="$dir"; best_ver="$ver"; fi
    done
    printf '%s' "$best"
}

# A non-root PATH often lacks the sbin folders, where sshd, ip and useradd live.
have() { command -v "$1" >/dev/null 2>&1 || [[ -x "/usr/sbin/$1" || -x "/sbin/$1" ]]; }

have_pg_server() { [[ -n "$(pg_bindir)" ]]; }

have_pg_trgm() {
    local bindir
    bindir="$(pg_bindir)"
    [[ -n "$bindir" && -f "/usr/share/postgresql/$(pg_version_of "$bindir")/extension/pg_trgm.control" ]]
}

have_all() {
    local name
    for name in "$@"; do have "$name" || return 1; done
}

pretended_missing() { [[ " ${TEST_SERVICES_PRETEND_MISSING:-} " == *" $1 "* ]]; }

# check_one MODE PACKAGE WHAT TEST...: print "PACKAGE<TAB>WHAT" when TEST fails
# (or, in MODE pretend, when PACKAGE is on the pretend list).
check_one() {
    local mode="$1" pkg="$2" what="$3"; shift 3
    if ! "$@" || { [[ "$mode" == pretend ]] && pretended_missing "$pkg"; }; then
        printf '%s\t%s\n' "$pkg" "$what"
    fi
}

missing_packages() {
    local m="${1:-real}"
    check_one "$m" postgresql "PostgreSQL >= 15 server: /usr/lib/postgresql/*/bin/initdb, pg_ctl" have_pg_server
    check_one "$m" postgresql-contrib "pg_trgm extension" have_pg_trgm
    check_one "$m" redis-server "redis-server" have redis-server
    check_one "$m" redis-tools "redis-cli" have redis-cli
    check_one "$m" openssh-server "/usr/sbin/sshd" test -x /usr/sbin/sshd
    check_one "$m" openssh-client "ssh, ssh-keygen" have_all ssh ssh-keygen
    check_one "$m" chromium "/usr/bin/chromium" test -x /usr/bin/chromium
    check_one "$m" chromium-driver "chromedriver" have chromedriver
    check_one "$m" iproute2 "ip" have ip
    check_one "$m" util-linux "runuser, setsid" have_all runuser setsid
    check_one "$m" passwd "useradd, usermod" have_all useradd usermod
    check_one "$m" shellcheck "shellcheck (lints the scripts run on GPU hosts)" have shellcheck
}

report_missing() {
    local lines="$1" pkg what pkgs
    log "missing system packages:"
    while IFS=$'\t' read -r pkg what; do log "  $pkg  ($what)"; done <<<"$lines"
    pkgs="$(cut -f1 <<<"$lines" | tr '\n' ' ')"
    log "install them as root (or with sudo), on Debian 12:"
    log "  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${pkgs% }"
}

# Why packages cannot be installed here; empty when they can.
no_install_reason() {
    if [[ "${TEST_SERVICES_NO_INSTALL:-0}" == 1 ]]; then echo "TEST_SERVICES_NO_INSTALL=1"
    elif ! is_root; then echo "not running as root"
    elif ! have apt-get; then echo "no apt-get on this system"
    fi
}

ensure_packages() {
    local missing
    missing="$(missing_packages pretend)"
    [[ -z "$missing" ]] && return 0
    local reason
    reason="$(no_install_reason)"
    if [[ -n "$reason" ]]; then
        report_missing "$missing"
        die "not installing them: $reason"
    fi
    log "installing: $(cut -f1 <<<"$missing" | tr '\n' ' ')"
    apt-get update -q >&2
    # shellcheck disable=SC2046  # one word per package is intended
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        $(cut -f1 <<<"$missing") >&2
    missing="$(missing_packages real)"
    [[ -z "$missing" ]] || { report_missing "$missing"; die "still missing after apt-get install"; }
}

# ---------------------------------------------------------------- helpers

find_python() {
    local py
    for py in "${PYTHON:-}" "$REPO_DIR/.venv/bin/python" python3; do
        if [[ -n "$py" ]] && command -v "$py" >/dev/null 2>&1; then printf '%s' "$py"; return 0; fi
    done
    die "no python3 found to pick free ports (set PYTHON=...)"
}

# A TCP port free on 127.0.0.1 right now. Someone may take it before we bind,
# hence the retries around each start.
free_port() {
    "$(find_python)" -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

port_open() { tcp_open 127.0.0.1 "$1"; }

tcp_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

# wait_until SECONDS CMD...: poll CMD every 0.1 s until it succeeds.
wait_until() {
    local deadline=$((SECONDS + $1)); shift
    until "$@"; do
        (( SECONDS < deadline )) || return 1
        sleep 0.1
    done
}

pid_alive() { [[ -s "$1" ]] && kill -0 "$(cat -- "$1")" 2>/dev/null; }

# A daemon's parent is init, which may reap it late; a zombie counts as gone.
pid_gone() {
    local stat
    kill -0 "$1" 2>/dev/null || return 0
    stat="$(cat -- "/proc/$1/stat" 2>/dev/null)" || return 0
    stat="${stat##*) }"
    [[ "${stat%% *}" == Z ]]
}

# kill_pidfile FILE: TERM the process named in FILE and wait briefly for it to go.
kill_pidfile() {
    local pid
    pid_alive "$1" || return 0
    pid="$(cat -- "$1")"
    kill "$pid" 2>/dev/null || true
    wait_until 10 pid_gone "$pid" || log "process $pid (from $1) still running"
}

# wait_for_start PID READY ARGS...: 0 once READY ARGS succeeds; 1 as soon as
# PID dies (a taken port, say) or after 15 s, when PID is killed.
# Services run undetached (as background jobs of this script) so that PID is
# known at once: a daemonizing service that dies early leaves nothing to watch.
# setsid keeps a Ctrl-C meant for the tests from reaching them.
wait_for_start() {
    local pid="$1" deadline=$((SECONDS + 15))
    shift
    until "$@"; do
        pid_gone "$pid" && return 1
        if (( SECONDS >= deadline )); then kill "$pid" 2>/dev/null; return 1; fi
        sleep 0.1
    done
}

show_log() {
    log "---- last lines of $1 ----"
    tail -n 30 -- "$1" >&2 2>/dev/null || true
}

# initdb refuses to run as root, so as root the cluster belongs to `postgres`.
as_pg_owner() {
    if is_root; then runuser -u postgres -- "$@"; else "$@"; fi
}

give_to_pg_owner() {
    if is_root; then chown postgres: "$@"; fi
}

ssh_user() { if is_root; then echo "$SSH_TEST_USER_ROOT"; else id -un; fi; }

# ---------------------------------------------------------------- PostgreSQL

init_postgres() {
    local bindir="$1"
    mkdir -p "$TMP/pg"
    give_to_pg_owner "$TMP/pg"
    as_pg_owner "$bindir/initdb" -D "$TMP/pg/data" -U postgres --auth=trust \
        --encoding=UTF8 --no-locale --no-sync >"$TMP/logs/initdb.log" 2>&1 \
        || { show_log "$TMP/logs/initdb.log"; die "initdb failed"; }
    # Durability is pointless for a throw-away test cluster; speed is not. No statement
    # of the tests or benches takes a minute: one that runs 5 is stuck (once, an INSERT
    # looped on an index left broken by a backend's crash) and fails instead of eating
    # the CI's time.
    cat >>"$TMP/pg/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
unix_socket_directories = '$TMP/pg'
fsync = off
synchronous_commit = off
full_page_writes = off
statement_timeout = '5min'
CONF
}

start_postgres() {
    local bindir="$1" port="$2"
    touch "$TMP/logs/postgres.log"
    give_to_pg_owner "$TMP/logs/postgres.log"
    # shellcheck disable=SC2094  # the service and the redirect both only append
    as_pg_owner "$bindir/pg_ctl" -D "$TMP/pg/data" -l "$TMP/logs/postgres.log" -w -t 30 \
        -o "-p $port" start </dev/null >/dev/null 2>>"$TMP/logs/postgres.log"
}

prepare_database() {
    local bindir="$1" port="$2"
    local -a psql=("$bindir/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres)
    # In template1, so every database made later (Django's test_* too) has it.
    "${psql[@]}" -d template1 -c 'CREATE EXTENSION IF NOT EXISTS pg_trgm' \
        </dev/null >>"$TMP/logs/postgres.log" 2>&1
    "${psql[@]}" -d postgres -c 'CREATE DATABASE fixgraph' \
        </dev/null >>"$TMP/logs/postgres.log" 2>&1
}

stop_postgres() {
    local dir="$1" bindir
    [[ -f "$dir/pg/data/postmaster.pid" ]] || return 0
    bindir="$(pg_bindir)"
    as_pg_owner "$bindir/pg_ctl" -D "$dir/pg/data" -m fast -w -t 30 stop >/dev/null 2>&1 \
        || log "pg_ctl stop failed for $dir/pg/data"
}

# ---------------------------------------------------------------- Redis

start_redis() {
    local port="$1"
    mkdir -p "$TMP/redis"
    rm -f -- "$TMP/redis/redis.pid"
    # shellcheck disable=SC2094  # the service and the redirect both only append
    setsid redis-server --port "$port" --bind 127.0.0.1 --daemonize no \
        --pidfile "$TMP/redis/redis.pid" --dir "$TMP/redis" \
        --logfile "$TMP/logs/redis.log" --save '' --appendonly no \
        </dev/null >/dev/null 2>>"$TMP/logs/redis.log" &
    wait_for_start "$!" redis_ready "$port"
}

redis_ready() { [[ "$(redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null)" == PONG ]]; }

stop_redis() { kill_pidfile "$1/redis/redis.pid"; }

# ---------------------------------------------------------------- sshd

ensure_ssh_user() {
    local user="$1"
    is_root || return 0
    # Two copies may race here; losing the race is fine if the user now exists.
    id -u "$user" >/dev/null 2>&1 \
        || useradd -m -s /bin/bash "$user" 2>>"$TMP/logs/sshd.log" \
        || id -u "$user" >/dev/null 2>&1 \
        || die "could not create user $user"
    # useradd leaves the account locked and sshd refuses keys for locked accounts;
    # '*' unlocks it without giving it any password.
    usermod -p '*' "$user"
}

make_ssh_keys() {
    local d="$TMP/ssh"
    mkdir -p "$d"
    ssh-keygen -q -t ed25519 -N '' -C fixgraph-test-host -f "$d/host_ed25519" </dev/null
    ssh-keygen -q -t ed25519 -N '' -C fixgraph-test-client -f "$d/client_ed25519" </dev/null
    cp -- "$d/client_ed25519.pub" "$d/authorized_keys"
    # sshd reads authorized_keys with the test user's rights.
    chmod 755 "$d"
    chmod 644 "$d/authorized_keys"
}

# write_sshd_config DIR ADDRESS PORT USER: DIR/sshd_config for an sshd with its host
# key and pid file in DIR, letting USER in with the one test client key.
write_sshd_config() {
    local dir="$1" address="$2" port="$3" user="$4" cfg="$1/sshd_config"
    cat >"$cfg" <<CONF
Port $port
ListenAddress $address
HostKey $dir/host_ed25519
PidFile $dir/sshd.pid
AuthorizedKeysFile $TMP/ssh/authorized_keys
# The keys file lives under /tmp, which StrictModes rejects as world-writable.
StrictModes no
AllowUsers $user
PermitRootLogin no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PrintMotd no
MaxStartups 100:30:200
Subsystem sftp internal-sftp
CONF
    # OpenSSH >= 9.8 would shut the client out for a while after the "unknown
    # key is refused" test; older releases reject the option, so probe first.
    printf 'PerSourcePenalties no\n' >>"$cfg"
    /usr/sbin/sshd -t -f "$cfg" </dev/null >/dev/null 2>&1 || sed -i '/^PerSourcePenalties/d' "$cfg"
}

start_sshd() {
    local user="$1" port="$2"
    write_sshd_config "$TMP/ssh" 127.0.0.1 "$port" "$user"
    rm -f -- "$TMP/ssh/sshd.pid"
    # sshd running as root insists on its privilege separation folder.
    if is_root; then mkdir -p /run/sshd; fi
    # shellcheck disable=SC2094  # the service and the redirect both only append
    setsid /usr/sbin/sshd -D -f "$TMP/ssh/sshd_config" -E "$TMP/logs/sshd.log" \
        </dev/null >/dev/null 2>>"$TMP/logs/sshd.log" &
    wait_for_start "$!" sshd_ready "$port"
}

sshd_ready() { pid_alive "$TMP/ssh/sshd.pid" && port_open "$1"; }

stop_sshd() { kill_pidfile "$1/ssh/sshd.pid"; }

# ---------------------------------------------------------------- test hosts in namespaces

# Each test host is a network namespace joined to this one by a veth pair: the
# root side is 10.200.N.1/30, the host 10.200.N.2/30 with an sshd on port 22 and
# a hostname of its own. Only these addresses and loopback are ever targets.
# Names carry this script's pid, so copies running side by side never meet;
# $TMP/netns/made lists what was made, for the clean-up.
readonly NETNS_HOSTS=2
readonly NETNS_LOCK="${TMPDIR:-/tmp}/fixgraph-test-netns.lock"

# As tests/services.py reads it.
in_ci() {
    local ci="${CI:-}"
    ci="${ci,,}"
    [[ "$ci" =~ ^[[:space:]]*(true|1|yes)[[:space:]]*$ ]]
}

# Why no namespaces can be made here; empty when they can.
no_netns_reason() {
    if [[ "${TEST_SERVICES_NO_NETNS:-0}" == 1 ]]; then echo "TEST_SERVICES_NO_NETNS=1"
    elif ! is_root; then echo "not running as root"
    elif ! have ip; then echo "no ip (iproute2)"
    elif ! ip netns list >/dev/null 2>&1; then echo "\`ip netns\` does not work here"
    fi
}

# A free third octet for 10.200.N.0/30: no address or route of this namespace
# uses it. Call with NETNS_LOCK held, so two copies cannot pick the same one.
pick_subnet() {
    local taken n i start=$((RANDOM % 254))
    taken="$(ip -4 -o addr show; ip -4 route show)"
    for ((i = 0; i < 254; i++)); do
        n=$(((start + i) % 254 + 1))
        [[ "$taken" == *"10.200.$n."* ]] || { printf '%s' "$n"; return 0; }
    done
    return 1
}

# make_veth VETH PEER: the pair, with a fresh subnet on VETH; prints N.
make_veth() {
    local veth="$1" peer="$2" lock n
    exec {lock}>>"$NETNS_LOCK"
    flock -w 30 "$lock" || { exec {lock}>&-; return 1; }
    n="$(pick_subnet)" \
        && ip link add "$veth" type veth peer name "$peer" \
        && ip addr add "10.200.$n.1/30" dev "$veth" \
        && ip link set "$veth" up \
        || n=""
    exec {lock}>&-
    [[ -n "$n" ]] && printf '%s' "$n"
}

# make_netns_host I USER: namespace I with its sshd; leaves DIR/address.
make_netns_host() {
    local i="$1" user="$2" dir="$TMP/netns/$1" ns="fg-$$-$1" veth="fgv$$-$1" peer="fgp$$-$1" n
    mkdir -p "$dir"
    # Listed before it exists, so a failure half-way still gets cleaned up.
    printf '%s %s\n' "$ns" "$veth" >>"$TMP/netns/made"
    ip netns add "$ns" 2>>"$TMP/logs/netns.log" || return 1
    n="$(make_veth "$veth" "$peer" 2>>"$TMP/logs/netns.log")" || return 1
    ip link set "$peer" netns "$ns" \
        && ip -n "$ns" addr add "10.200.$n.2/30" dev "$peer" \
        && ip -n "$ns" link set "$peer" up \
        && ip -n "$ns" link set lo up \
        || return 1
    ssh-keygen -q -t ed25519 -N '' -C "fixgraph-test-$ns" -f "$dir/host_ed25519" </dev/null \
        || return 1
    write_sshd_config "$dir" "10.200.$n.2" 22 "$user"
    start_netns_sshd "$ns" "$dir" "10.200.$n.2" || return 1
    printf '%s' "10.200.$n.2" >"$dir/address"
}

# start_netns_sshd NS DIR ADDRESS: sshd inside NS, in a UTS namespace named NS
# when unshare is there (so `hostname` tells the hosts apart).
start_netns_sshd() {
    local ns="$1" dir="$2" address="$3" logfile="$TMP/logs/sshd-$1.log"
    local -a uts=()
    # shellcheck disable=SC2016  # expanded by that sh, not here
    if have unshare; then uts=(unshare --uts -- /bin/sh -c 'hostname "$0" && exec "$@"' "$ns"); fi
    mkdir -p /run/sshd
    # shellcheck disable=SC2094  # the service and the redirect both only append
    setsid ip netns exec "$ns" "${uts[@]}" /usr/sbin/sshd -D -f "$dir/sshd_config" -E "$logfile" \
        </dev/null >/dev/null 2>>"$logfile" &
    wait_for_start "$!" netns_sshd_ready "$dir" "$address" || { show_log "$logfile"; return 1; }
}

netns_sshd_ready() { pid_alive "$1/sshd.pid" && tcp_open "$2" 22; }

no_netns_hosts() {
    in_ci && die "no test hosts in network namespaces under CI=true: $1"
    log "no test hosts in network namespaces ($1); their tests will skip"
}

start_netns_hosts() {
    local user="$1" reason i
    reason="$(no_netns_reason)"
    [[ -z "$reason" ]] || { no_netns_hosts "$reason"; return 0; }
    mkdir -p "$TMP/netns"
    for ((i = 1; i <= NETNS_HOSTS; i++)); do
        if ! make_netns_host "$i" "$user"; then
            show_log "$TMP/logs/netns.log"
            stop_netns_hosts "$TMP"
            no_netns_hosts "test host $i did not start"
            return 0
        fi
    done
    log "test hosts in namespaces: $(netns_list addresses) (sshd on port 22, user $user)"
}

# netns_list addresses|host_keys: one comma-separated line, in host order.
netns_list() {
    local what="$1" i out=""
    for ((i = 1; i <= NETNS_HOSTS; i++)); do
        [[ -f "$TMP/netns/$i/address" ]] || return 0
        if [[ "$what" == addresses ]]; then out+="$(cat -- "$TMP/netns/$i/address"),"
        else out+="$TMP/netns/$i/host_ed25519.pub,"; fi
    done
    printf '%s' "${out%,}"
}

# Everything inside a namespace goes: its sshd, the sessions it forked and
# whatever they left running. Then the namespace and the veth pair go.
stop_netns_hosts() {
    local dir="$1" ns veth
    [[ -f "$dir/netns/made" ]] || return 0
    while read -r ns veth; do
        stop_netns_processes "$ns"
        ip netns del "$ns" 2>/dev/null || true
        # Deleting the namespace takes its end of the pair and so both ends;
        # this only matters when the peer never moved into it.
        ip link del "$veth" 2>/dev/null || true
    done <"$dir/netns/made"
    rm -f -- "$dir/netns/made"
}

stop_netns_processes() {
    local ns="$1" pids
    pids="$(ip netns pids "$ns" 2>/dev/null)" || return 0
    [[ -n "$pids" ]] || return 0
    # shellcheck disable=SC2086  # one word per pid is intended
    kill $pids 2>/dev/null || true
    wait_until 10 netns_empty "$ns" && return 0
    # shellcheck disable=SC2046
    kill -KILL $(ip netns pids "$ns" 2>/dev/null) 2>/dev/null || true
    wait_until 5 netns_empty "$ns" || log "processes still running in namespace $ns"
}

netns_empty() {
    local pid
    for pid in $(ip netns pids "$1" 2>/dev/null); do pid_gone "$pid" || return 1; done
}

# ---------------------------------------------------------------- orchestration

# start_with_retry NAME LOG START_FN ARGS...: calls START_FN ARGS... PORT and
# prints PORT once it started; a port taken meanwhile by another process gets a
# retry (a START_FN that fails leaves nothing running).
start_with_retry() {
    local name="$1" logfile="$2" attempt port
    shift 2
    for ((attempt = 1; attempt <= START_ATTEMPTS; attempt++)); do
        port="$(free_port)"
        if "$@" "$port"; then printf '%s' "$port"; return 0; fi
        log "$name did not start on port $port (attempt $attempt of $START_ATTEMPTS)"
    done
    show_log "$logfile"
    die "$name failed to start"
}

make_tmp() {
    TMP="$(mktemp -d "${TMPDIR:-/tmp}/fixgraph-services.XXXXXX")"
    touch "$TMP/$MARKER"
    # The postgres and test users must reach their own files in here.
    chmod 755 "$TMP"
    mkdir -p "$TMP/logs"
}

start_all() {
    local t0="$EPOCHREALTIME" bindir pg_port redis_port ssh_port user
    ensure_packages
    make_tmp
    bindir="$(pg_bindir)"
    user="$(ssh_user)"

    init_postgres "$bindir"
    pg_port="$(start_with_retry postgres "$TMP/logs/postgres.log" start_postgres "$bindir")"
    prepare_database "$bindir" "$pg_port" \
        || { show_log "$TMP/logs/postgres.log"; die "could not create database fixgraph"; }
    log "postgres $(pg_version_of "$bindir") on 127.0.0.1:$pg_port (database fixgraph, pg_trgm)"

    redis_port="$(start_with_retry redis "$TMP/logs/redis.log" start_redis)"
    log "redis on 127.0.0.1:$redis_port"

    ensure_ssh_user "$user"
    make_ssh_keys
    ssh_port="$(start_with_retry sshd "$TMP/logs/sshd.log" start_sshd "$user")"
    log "sshd on 127.0.0.1:$ssh_port (user $user)"
    start_netns_hosts "$user"

    write_env "$pg_port" "$redis_port" "$ssh_port" "$user"
    log "ready in $(seconds_since "$t0") s, folder $TMP"
}

seconds_since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

random_secret() { od -An -tx1 -N32 /dev/urandom | tr -d ' \n'; }

write_env() {
    local pg="$1" redis="$2" ssh="$3" user="$4"
    printf 'export %s=%q\n' \
        DATABASE_URL "postgres://postgres@127.0.0.1:$pg/fixgraph" \
        REDIS_URL "redis://127.0.0.1:$redis/0" \
        CELERY_BROKER_URL "redis://127.0.0.1:$redis/1" \
        CELERY_RESULT_BACKEND "redis://127.0.0.1:$redis/2" \
        FIXGRAPH_TEST_SSH_HOST 127.0.0.1 \
        FIXGRAPH_TEST_SSH_PORT "$ssh" \
        FIXGRAPH_TEST_SSH_USER "$user" \
        FIXGRAPH_TEST_SSH_KEY "$TMP/ssh/client_ed25519" \
        FIXGRAPH_TEST_SSH_HOST_KEY "$TMP/ssh/host_ed25519.pub" \
        FIXGRAPH_TEST_TMP "$TMP" \
        FIXGRAPH_SERVICES 1 \
        CHROMIUM_PATH /usr/bin/chromium \
        SECRET_KEY "$(random_secret)" >"$TMP/env.sh"
    # Absent, not empty, when no namespace hosts were made: their tests then skip.
    if [[ -n "$(netns_list addresses)" ]]; then
        printf 'export %s=%q\n' \
            FIXGRAPH_TEST_NETNS_HOSTS "$(netns_list addresses)" \
            FIXGRAPH_TEST_NETNS_HOST_KEYS "$(netns_list host_keys)" >>"$TMP/env.sh"
    fi
}

stop_all() {
    stop_netns_hosts "$1"
    stop_sshd "$1"
    stop_redis "$1"
    stop_postgres "$1"
}

cleanup() {
    local rc=$?
    trap - EXIT INT TERM HUP
    if [[ -n "$TMP" && -f "$TMP/$MARKER" ]]; then
        stop_all "$TMP" || true
        if [[ "${KEEP_TEST_SERVICES:-0}" == 1 ]]; then log "kept $TMP"; else rm -rf -- "$TMP"; fi
    fi
    exit "$rc"
}

# CMD runs in the background so that a TERM sent to this script (a CI timeout,
# say) is handled at once: pass it on, wait for CMD, then clean up.
on_signal() {
    local sig="$1" code="$2"
    if [[ -n "$CHILD_PID" ]]; then
        # A Ctrl-C reached CMD too (same process group); a second INT would cut
        # short pytest's own clean-up, so give it time, then end it with TERM.
        if [[ "$sig" == INT ]]; then
            wait_until 5 pid_gone "$CHILD_PID" || true
            sig=TERM
        fi
        kill -s "$sig" "$CHILD_PID" 2>/dev/null || true
        wait "$CHILD_PID" 2>/dev/null || true
    fi
    exit "$code"
}

install_traps() {
    trap cleanup EXIT
    trap 'on_signal INT 130' INT
    trap 'on_signal TERM 143' TERM
    trap 'on_signal HUP 129' HUP
}

run_command() {
    local rc=0
    # shellcheck disable=SC1091  # written by write_env at run time
    source "$TMP/env.sh"
    # A background job would get stdin from /dev/null and ignore Ctrl-C; the
    # explicit <&0 and `env --default-signal` (coreutils >= 8.31) undo both.
    local -a unignore=()
    if env --default-signal=INT true 2>/dev/null; then unignore=(env "--default-signal=INT,QUIT"); fi
    "${unignore[@]}" "$@" <&0 &
    CHILD_PID=$!
    wait "$CHILD_PID" || rc=$?
    CHILD_PID=""
    return "$rc"
}

cmd_run() {
    [[ "${1:-}" == -- ]] && shift
    (( $# > 0 )) || die "usage: $0 run -- CMD..."
    install_traps
    start_all
    local rc=0
    run_command "$@" || rc=$?
    exit "$rc"
}

cmd_check() {
    local missing
    missing="$(missing_packages pretend)"
    if [[ -n "$missing" ]]; then report_missing "$missing"; exit 1; fi
    log "all system packages present (PostgreSQL $(pg_version_of "$(pg_bindir)"))"
}

cmd_up() {
    install_traps
    start_all
    trap - EXIT INT TERM HUP
    cat -- "$TMP/env.sh"
    log "stop with: $0 down $TMP"
}

cmd_down() {
    local dir="${1:-}"
    # The marker keeps `down` from deleting a folder this script did not make.
    [[ -n "$dir" && -f "$dir/$MARKER" ]] || die "usage: $0 down DIR (a folder made by '$0 up')"
    stop_all "$dir"
    rm -rf -- "$dir"
    log "stopped and removed $dir"
}

main() {
    local sub="${1:-}"
    if (( $# > 0 )); then shift; fi
    case "$sub" in
        run) cmd_run "$@" ;;
        check) cmd_check ;;
        up) cmd_up ;;
        down) cmd_down "$@" ;;
        *) die "usage: $0 {run -- CMD...|check|up|down DIR}" ;;
    esac
}

main "$@"
