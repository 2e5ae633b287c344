#!/usr/bin/env bash
# local-cluster.sh - a real single-node SLURM cluster on 127.0.0.1 for tests and CI.
#
#   bash slurm/local-cluster.sh up|down|status|env|purge [DIR]
#
# Runs munged, MariaDB + slurmdbd (accounting) and slurmctld + slurmd as plain
# background daemons (no systemd, no cgroups), all of their files under DIR.
# See slurm/README.md for the knobs and for what the test suite relies on.
set -uo pipefail
export LC_ALL=C
umask 022
PATH=$PATH:/usr/local/sbin:/usr/sbin:/sbin

PROG=${0##*/}
MARKER=.infonoise-local-cluster
CLUSTER_NAME=localcluster
NODE=localhost
MAX_DIR_LEN=60   # unix socket paths (<108 bytes) live under DIR, e.g. spool/localhost_<job>.<step>

usage() {
    cat >&2 <<EOF
usage: $PROG up|down|status|env|purge [DIR]

  up      install missing packages, start the cluster in DIR, print 'export SLURM_CONF=...'
  down    cancel all jobs and stop the daemons started in DIR
  status  show the daemons and the node; exit 0 when the cluster is up
  env     print 'export SLURM_CONF=DIR/slurm.conf'
  purge   down, then delete DIR (only a DIR this script created)

DIR defaults to \$SLURM_LOCAL_DIR, else /tmp/infonoise-slurm.
Knobs (environment): SLURM_LOCAL_ACCOUNTING=1 SLURM_LOCAL_INSTALL=1 SLURM_LOCAL_TIMEOUT=60
  SLURM_LOCAL_SMOKE=1 SLURM_LOCAL_KEEP_STATE=0 SLURM_LOCAL_KEEP_ON_FAIL=0 SLURM_LOCAL_CPUS
  SLURM_LOCAL_MEM_MB SLURM_LOCAL_MAX_ARRAY_SIZE SLURM_LOCAL_EXTRA_CONF
  SLURM_LOCAL_CTLD_PORT=6817 SLURM_LOCAL_SLURMD_PORT=6818 SLURM_LOCAL_DBD_PORT=6819
  SLURM_LOCAL_DB_PORT=16033
EOF
}

log() { printf '%s: %s\n' "$PROG" "$*" >&2; }

# ---------------------------------------------------------------- arguments and knobs
CMD=${1:-}
case $CMD in
    up|down|status|env|purge) ;;
    -h|--help|help) usage; exit 0 ;;
    *) usage; exit 2 ;;
esac
[ $# -le 2 ] || { usage; exit 2; }

DIR_ARG=${2:-${SLURM_LOCAL_DIR:-/tmp/infonoise-slurm}}
ACCOUNTING=${SLURM_LOCAL_ACCOUNTING:-1}
INSTALL=${SLURM_LOCAL_INSTALL:-1}
TIMEOUT=${SLURM_LOCAL_TIMEOUT:-60}
SMOKE=${SLURM_LOCAL_SMOKE:-1}
KEEP_STATE=${SLURM_LOCAL_KEEP_STATE:-0}
KEEP_ON_FAIL=${SLURM_LOCAL_KEEP_ON_FAIL:-0}
CPUS=${SLURM_LOCAL_CPUS:-}
MEM_MB=${SLURM_LOCAL_MEM_MB:-}
MAX_ARRAY_SIZE=${SLURM_LOCAL_MAX_ARRAY_SIZE:-}
EXTRA_CONF=${SLURM_LOCAL_EXTRA_CONF:-}
CTLD_PORT=${SLURM_LOCAL_CTLD_PORT:-6817}
SLURMD_PORT=${SLURM_LOCAL_SLURMD_PORT:-6818}
DBD_PORT=${SLURM_LOCAL_DBD_PORT:-6819}
DB_PORT=${SLURM_LOCAL_DB_PORT:-16033}

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }
for knob in ACCOUNTING INSTALL SMOKE KEEP_STATE KEEP_ON_FAIL; do
    [[ ${!knob} == 0 || ${!knob} == 1 ]] || { log "SLURM_LOCAL_$knob must be 0 or 1 (got '${!knob}')"; exit 2; }
done
for knob in TIMEOUT CTLD_PORT SLURMD_PORT DBD_PORT DB_PORT; do
    is_uint "${!knob}" && [ "${!knob}" -gt 0 ] || { log "SLURM_LOCAL_$knob must be a positive integer (got '${!knob}')"; exit 2; }
done
for knob in CPUS MEM_MB MAX_ARRAY_SIZE; do
    [ -z "${!knob}" ] || { is_uint "${!knob}" && [ "${!knob}" -gt 0 ]; } \
        || { log "SLURM_LOCAL_$knob must be a positive integer (got '${!knob}')"; exit 2; }
done
if [ -n "$MAX_ARRAY_SIZE" ] && [ "$MAX_ARRAY_SIZE" -gt 4000001 ]; then
    log "SLURM_LOCAL_MAX_ARRAY_SIZE must be at most 4000001"; exit 2
fi

DIR=$(realpath -m -- "$DIR_ARG") || { log "bad DIR '$DIR_ARG'"; exit 2; }
[ "$DIR" != / ] || { log "refusing to use / as DIR"; exit 2; }
CONF=$DIR/slurm.conf
DBD_CONF=$DIR/slurmdbd.conf
PIDS=$DIR/pids
MUNGE_SOCKET=$DIR/munge/munge.socket
MYSQL_SOCKET=$DIR/mysql/mysqld.sock

# Client commands must talk to this cluster only: drop inherited SLURM_* variables
# (e.g. SLURM_JOB_ID when run inside a job) and point SLURM_CONF at DIR.
while read -r var; do unset "$var"; done < <(compgen -e | grep '^SLURM_')
export SLURM_CONF=$CONF

if [ "$ACCOUNTING" = 1 ]; then
    DAEMONS=(munged mariadbd slurmdbd slurmctld slurmd)
else
    DAEMONS=(munged slurmctld slurmd)
fi
ALL_DAEMONS=(munged mariadbd slurmdbd slurmctld slurmd)

# ---------------------------------------------------------------- small helpers
now_ms() { local t=$EPOCHREALTIME; echo $(( ${t%.*} * 1000 + 10#${t#*.} / 1000 )); }
secs_since() { local d=$(( $(now_ms) - $1 )); printf '%d.%d' $(( d / 1000 )) $(( d % 1000 / 100 )); }

# wait_until DESC SECONDS CMD...: poll CMD every 0.1 s; CMD returning 2 means "give up now".
wait_until() {
    local desc=$1 secs=$2 end rc
    shift 2
    end=$(( $(now_ms) + secs * 1000 ))
    while :; do
        "$@"; rc=$?
        [ $rc -eq 0 ] && return 0
        if [ $rc -eq 2 ]; then log "gave up waiting for $desc"; return 1; fi
        if [ "$(now_ms)" -ge $end ]; then log "timed out after ${secs}s waiting for $desc"; return 1; fi
        sleep 0.1
    done
}

# alive PID COMM: true if PID runs, is not a zombie (PID 1 may not reap), and is COMM.
alive() {
    local pid=$1 comm=$2 stat state c
    is_uint "$pid" || return 1
    stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
    state=${stat##*) }
    state=${state%% *}
    [[ $state == Z || $state == X || $state == x ]] && return 1
    c=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
    [ "$c" = "$comm" ]
}
dead() { ! alive "$@"; }

pid_of() { [ -f "$PIDS" ] && awk -v n="$1" '$1 == n { p = $2 } END { if (p != "") print p }' "$PIDS"; }
record_pid() {
    local tmp=$PIDS.tmp
    { [ -f "$PIDS" ] && awk -v n="$1" '$1 != n' "$PIDS"; printf '%s %s\n' "$1" "$2"; } >"$tmp" && mv -f "$tmp" "$PIDS"
}
daemon_alive() { local p; p=$(pid_of "$1"); [ -n "$p" ] && alive "$p" "$1"; }

# read_pidfile FILE: the PID in FILE, once it is there.
pidfile_ready() { [ -s "$1" ] && is_uint "$(tr -d ' \n' <"$1")"; }
read_pidfile() { tr -d ' \n' <"$1"; }

port_listening() {
    local hex
    hex=$(printf ':%04X' "$1")
    awk -v p="$hex" 'FNR > 1 && $4 == "0A" && substr($2, length($2) - 4) == p { f = 1 } END { exit !f }' \
        /proc/net/tcp /proc/net/tcp6 2>/dev/null
}
port_holder() { command -v ss >/dev/null && ss -Hltnp "sport = :$1" 2>/dev/null | sed 's/^/    /' >&2; }

node_state() {
    local s
    s=$(sinfo -h -n "$NODE" -o %T 2>/dev/null | sort -u) || return 1
    [ -n "$s" ] && printf '%s\n' "$s" | head -n1
}
ctld_up() { scontrol ping 2>/dev/null | grep -q 'is UP'; }

# is_up: all expected daemons alive, the controller answers and the node is usable.
# Submits no job (a busy node would make that wait).
is_up() {
    local d st
    [ -f "$CONF" ] && [ -f "$PIDS" ] || return 1
    for d in "${DAEMONS[@]}"; do daemon_alive "$d" || return 1; done
    ctld_up || return 1
    st=$(node_state) || return 1
    [[ $st =~ ^(idle|mixed|allocated|completing)$ ]]
}

own_dir() { [ -f "$DIR/$MARKER" ]; }

# Refuse a DIR that is neither new, empty nor ours; create and mark it otherwise.
claim_dir() {
    if [ -e "$DIR" ] && ! own_dir; then
        [ -d "$DIR" ] || { log "$DIR exists and is not a directory"; exit 1; }
        if [ -n "$(ls -A "$DIR")" ]; then
            log "$DIR is not empty and was not created by $PROG (no $MARKER); refusing to use it"
            exit 1
        fi
    fi
    mkdir -p "$DIR" || { log "cannot create $DIR"; exit 1; }
    own_dir || echo "created by $PROG; 'purge' may delete this directory" >"$DIR/$MARKER"
}

LOCKED=0
take_lock() {
    [ $LOCKED = 1 ] && return 0
    exec 9>"$DIR/.lock" || { log "cannot open $DIR/.lock"; exit 1; }
    flock -w "$TIMEOUT" 9 || { log "another $PROG holds $DIR/.lock"; exit 1; }
    LOCKED=1
}

# ---------------------------------------------------------------- failure handling
STARTING=0
POLICY_BACKUP=
POLICY_REPLACED=0

restore_policy() {
    [ $POLICY_REPLACED = 1 ] || return 0
    if [ -n "$POLICY_BACKUP" ]; then
        mv -f "$POLICY_BACKUP" /usr/sbin/policy-rc.d
    else
        rm -f /usr/sbin/policy-rc.d
    fi
    POLICY_REPLACED=0
}
trap restore_policy EXIT
trap 'fail "interrupted"' INT TERM HUP

show_logs() {
    local f
    for f in "$DIR"/log/apt.log "$DIR"/log/munged.log "$DIR"/log/mariadb-install.log "$DIR"/log/mariadb.log \
             "$DIR"/log/slurmdbd.log "$DIR"/log/slurmctld.log "$DIR"/log/slurmd.log "$DIR"/log/smoke.log; do
        [ -s "$f" ] || continue
        printf '%s: ---- last lines of %s ----\n' "$PROG" "$f" >&2
        tail -n 15 "$f" | sed 's/^/    /' >&2
    done
}

fail() {
    trap - INT TERM HUP
    log "ERROR: $*"
    show_logs
    restore_policy
    if [ $STARTING = 1 ]; then
        STARTING=0
        if [ "$KEEP_ON_FAIL" = 1 ]; then
            log "SLURM_LOCAL_KEEP_ON_FAIL=1: leaving the daemons that did start running"
        else
            log "stopping what was started"
            stop_all quiet
        fi
    fi
    exit 1
}

# ---------------------------------------------------------------- packages
pkg_installed() { [ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null)" = "ii " ]; }

ensure_packages() {
    local want=(slurmctld slurmd slurm-client munge) missing=() p t0 apt=(apt-get -q -y -o DPkg::Lock::Timeout=300)
    [ "$ACCOUNTING" = 1 ] && want+=(slurmdbd mariadb-server)
    for p in "${want[@]}"; do pkg_installed "$p" || missing+=("$p"); done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$INSTALL" != 1 ]; then
        log "missing Debian packages: ${missing[*]} (SLURM_LOCAL_INSTALL=0, not installing)"
        log "install them with: apt-get install ${missing[*]}"
        exit 1
    fi
    command -v apt-get >/dev/null || { log "missing packages ${missing[*]} and no apt-get"; exit 1; }
    t0=$(now_ms)
    log "installing ${missing[*]} (log: $DIR/log/apt.log)"
    # Keep the packages' init scripts from starting munge/MariaDB/slurm on their default paths.
    if [ -e /usr/sbin/policy-rc.d ]; then
        POLICY_BACKUP=$(mktemp /usr/sbin/.policy-rc.d.XXXXXX) || fail "cannot back up policy-rc.d"
        cp -p /usr/sbin/policy-rc.d "$POLICY_BACKUP" || fail "cannot back up policy-rc.d"
    fi
    POLICY_REPLACED=1
    printf '#!/bin/sh\n# temporary, from %s\nexit 101\n' "$PROG" >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d \
        || fail "cannot write /usr/sbin/policy-rc.d"
    export DEBIAN_FRONTEND=noninteractive
    { "${apt[@]}" update && "${apt[@]}" install "${missing[@]}"; } </dev/null >>"$DIR/log/apt.log" 2>&1 9>&- \
        || fail "apt-get install ${missing[*]} failed"
    restore_policy
    for p in "${missing[@]}"; do pkg_installed "$p" || fail "package $p is still not installed"; done
    log "installed packages in $(secs_since "$t0") s"
}

# ---------------------------------------------------------------- configuration
ensure_secrets() {
    if [ ! -s "$DIR/munge/munge.key" ]; then
        dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none || fail "cannot create munge key"
    fi
    chown root:root "$DIR/munge/munge.key" && chmod 400 "$DIR/munge/munge.key" || fail "cannot fix munge key mode"
    if [ "$ACCOUNTING" = 1 ] && [ ! -s "$DIR/dbpass" ]; then
        (umask 077; head -c 32 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 24 >"$DIR/dbpass") \
            || fail "cannot create the database password"
    fi
}

node_line() {
    local kv out cpus boards sockets cores threads mem
    out=$(slurmd -C 2>/dev/null | head -n1)
    for kv in $out; do
        case ${kv%%=*} in
            CPUs) cpus=${kv#*=} ;;
            Boards) boards=${kv#*=} ;;
            SocketsPerBoard) sockets=${kv#*=} ;;
            CoresPerSocket) cores=${kv#*=} ;;
            ThreadsPerCore) threads=${kv#*=} ;;
        esac
    done
    mem=$MEM_MB
    [ -n "$mem" ] || mem=$(awk '/^MemTotal:/ { printf "%d", $2 / 1024 * 0.9 }' /proc/meminfo)
    if [ -n "$CPUS" ]; then
        printf 'NodeName=%s NodeAddr=127.0.0.1 CPUs=%s RealMemory=%s State=UNKNOWN\n' "$NODE" "$CPUS" "$mem"
    elif [ -n "${cpus:-}" ] && [ -n "${boards:-}" ] && [ -n "${sockets:-}" ] && [ -n "${cores:-}" ] && [ -n "${threads:-}" ]; then
        printf 'NodeName=%s NodeAddr=127.0.0.1 CPUs=%s Boards=%s SocketsPerBoard=%s CoresPerSocket=%s ThreadsPerCore=%s RealMemory=%s State=UNKNOWN\n' \
            "$NODE" "$cpus" "$boards" "$sockets" "$cores" "$threads" "$mem"
    else
        printf 'NodeName=%s NodeAddr=127.0.0.1 CPUs=%s RealMemory=%s State=UNKNOWN\n' "$NODE" "$(nproc)" "$mem"
    fi
}

gen_slurm_conf() {
    cat <<EOF
# Written by $PROG; rewritten by every 'up'.
ClusterName=$CLUSTER_NAME
SlurmctldHost=$NODE
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire also sets how long a requeued job waits before it may start again (default 120 s)
AuthInfo=socket=$MUNGE_SOCKET,cred_expire=10
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0,sched_interval=2,bf_interval=1
JobCompType=jobcomp/none
EOF
    if [ "$ACCOUNTING" = 1 ]; then
        cat <<EOF
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$DBD_PORT
# with auth/munge this names the munge socket used towards slurmdbd; it is not a password
AccountingStoragePass=$MUNGE_SOCKET
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30
EOF
    else
        printf 'AccountingStorageType=accounting_storage/none\nJobAcctGatherType=jobacct_gather/none\n'
    fi
    [ -n "$MAX_ARRAY_SIZE" ] && printf 'MaxArraySize=%s\n' "$MAX_ARRAY_SIZE"
    cat <<EOF
ReturnToService=2
KillWait=5
MailProg=/bin/true
SlurmdParameters=config_overrides
$(node_line)
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
    if [ -n "$EXTRA_CONF" ]; then
        printf '# SLURM_LOCAL_EXTRA_CONF\n%s\n' "$EXTRA_CONF"
    fi
}

gen_dbd_conf() {
    cat <<EOF
# Written by $PROG; rewritten by every 'up'.
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET
DbdHost=localhost
DbdPort=$DBD_PORT
SlurmUser=root
DebugLevel=info
LogFile=$DIR/log/slurmdbd.log
PidFile=$DIR/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=$(cat "$DIR/dbpass")
StorageLoc=slurm_acct_db
EOF
}

# ---------------------------------------------------------------- starting daemons
STEP_TIMES=()
step_done() { STEP_TIMES+=("$1 $(secs_since "$2") s"); }
join_steps() { local IFS=,; printf '%s' "${STEP_TIMES[*]}" | sed 's/,/, /g'; }

# Wait for a forking daemon's PID file, record the PID and check it is the daemon.
adopt_pidfile() {
    local name=$1 file=$2 pid
    wait_until "$name to write $file" "$TIMEOUT" pidfile_ready "$file" || fail "$name did not start"
    pid=$(read_pidfile "$file")
    record_pid "$name" "$pid"
    alive "$pid" "$name" || fail "$name (pid $pid) is not running"
}

munge_ok() {
    daemon_alive munged || return 2
    munge -n -S "$MUNGE_SOCKET" 2>/dev/null | unmunge -S "$MUNGE_SOCKET" >/dev/null 2>&1
}

start_munged() {
    local t0; t0=$(now_ms)
    rm -f "$DIR/run/munged.pid"
    munged --socket="$MUNGE_SOCKET" --key-file="$DIR/munge/munge.key" --pid-file="$DIR/run/munged.pid" \
        --log-file="$DIR/log/munged.log" --seed-file="$DIR/munge/munged.seed" \
        </dev/null >>"$DIR/log/munged.log" 2>&1 9>&- || fail "munged failed to start"
    adopt_pidfile munged "$DIR/run/munged.pid"
    wait_until "munge to answer" "$TIMEOUT" munge_ok || fail "munge does not work"
    step_done munged "$t0"
}

mysql_ok() {
    daemon_alive mariadbd || return 2
    mariadb-admin --no-defaults -S "$MYSQL_SOCKET" -uroot --connect-timeout=2 ping >/dev/null 2>&1
}

start_mariadbd() {
    local t0 pw drop=""
    t0=$(now_ms)
    if [ ! -f "$DIR/mysql/data/.initialised" ]; then
        rm -rf "$DIR/mysql/data"
        mariadb-install-db --no-defaults --user=root --datadir="$DIR/mysql/data" \
            --auth-root-authentication-method=socket --skip-test-db \
            </dev/null >>"$DIR/log/mariadb-install.log" 2>&1 9>&- || fail "mariadb-install-db failed"
        touch "$DIR/mysql/data/.initialised"
    fi
    rm -f "$DIR/run/mariadbd.pid"
    # mariadbd does not fork: detach it into its own session, with no inherited pipes.
    setsid mariadbd --no-defaults --user=root --datadir="$DIR/mysql/data" --socket="$MYSQL_SOCKET" \
        --pid-file="$DIR/run/mariadbd.pid" --log-error="$DIR/log/mariadb.log" --bind-address=127.0.0.1 \
        --port="$DB_PORT" --skip-name-resolve --innodb-buffer-pool-size=128M \
        --innodb-log-file-size=64M --innodb-lock-wait-timeout=900 \
        </dev/null >>"$DIR/log/mariadb.log" 2>&1 9>&- &
    record_pid mariadbd $!
    wait_until "mariadbd to answer" "$TIMEOUT" mysql_ok || fail "mariadbd did not start"
    if pidfile_ready "$DIR/run/mariadbd.pid"; then record_pid mariadbd "$(read_pidfile "$DIR/run/mariadbd.pid")"; fi
    daemon_alive mariadbd || fail "mariadbd is not running"
    pw=$(cat "$DIR/dbpass")
    [ "$KEEP_STATE" = 1 ] || drop="DROP DATABASE IF EXISTS slurm_acct_db;"
    mariadb --no-defaults -S "$MYSQL_SOCKET" -uroot -e "
        CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$pw';
        ALTER USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$pw';
        GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
        $drop
        FLUSH PRIVILEGES;" </dev/null >>"$DIR/log/mariadb.log" 2>&1 || fail "cannot set up the slurm database user"
    step_done mariadbd "$t0"
}

dbd_ok() { daemon_alive slurmdbd || return 2; port_listening "$DBD_PORT"; }

start_slurmdbd() {
    local t0; t0=$(now_ms)
    rm -f "$DIR/run/slurmdbd.pid"
    # slurmdbd has no -f: it reads slurmdbd.conf next to $SLURM_CONF.
    slurmdbd </dev/null >>"$DIR/log/slurmdbd.log" 2>&1 9>&- || fail "slurmdbd failed to start"
    adopt_pidfile slurmdbd "$DIR/run/slurmdbd.pid"
    wait_until "slurmdbd to listen on port $DBD_PORT" "$TIMEOUT" dbd_ok || fail "slurmdbd did not start"
    step_done slurmdbd "$t0"
}

ctld_ok() { daemon_alive slurmctld || return 2; ctld_up; }

start_slurmctld() {
    local t0; t0=$(now_ms)
    rm -f "$DIR/run/slurmctld.pid"
    slurmctld -f "$CONF" </dev/null >>"$DIR/log/slurmctld.log" 2>&1 9>&- || fail "slurmctld failed to start"
    adopt_pidfile slurmctld "$DIR/run/slurmctld.pid"
    wait_until "slurmctld to answer" "$TIMEOUT" ctld_ok || fail "slurmctld did not come up"
    step_done slurmctld "$t0"
}

node_idle() {
    daemon_alive slurmd || return 2
    daemon_alive slurmctld || return 2
    [ "$(node_state)" = idle ]
}

start_slurmd() {
    local t0; t0=$(now_ms)
    rm -f "$DIR/run/slurmd.pid"
    slurmd -f "$CONF" -N "$NODE" </dev/null >>"$DIR/log/slurmd.log" 2>&1 9>&- || fail "slurmd failed to start"
    adopt_pidfile slurmd "$DIR/run/slurmd.pid"
    wait_until "node $NODE to be idle" "$TIMEOUT" node_idle \
        || fail "node $NODE is not idle (state: $(node_state || echo unknown))"
    step_done slurmd "$t0"
}

print_env() {
    printf 'export SLURM_CONF=%q\n' "$CONF" >"$DIR/env.sh"
    cat "$DIR/env.sh"
}

do_up() {
    local t0 d p new_conf new_dbd changed=0
    t0=$(now_ms)
    [ "$(id -u)" = 0 ] || { log "up needs root (the daemons run as root)"; exit 1; }
    [ ${#DIR} -le $MAX_DIR_LEN ] || { log "DIR is too long (${#DIR} > $MAX_DIR_LEN chars) for socket paths: $DIR"; exit 1; }
    claim_dir
    take_lock
    mkdir -p "$DIR"/{munge,state,spool,log,run,mysql} || { log "cannot create directories in $DIR"; exit 1; }
    chmod 755 "$DIR" "$DIR/munge" "$DIR/log" "$DIR/run"
    ensure_packages
    for p in slurmctld slurmd srun sinfo scontrol munged munge unmunge; do
        command -v "$p" >/dev/null || fail "$p not found on PATH"
    done
    if [ "$ACCOUNTING" = 1 ]; then
        for p in slurmdbd mariadbd mariadb mariadb-admin mariadb-install-db; do
            command -v "$p" >/dev/null || fail "$p not found on PATH"
        done
    fi
    ensure_secrets

    new_conf=$(gen_slurm_conf) || fail "cannot write slurm.conf"
    new_dbd=""
    [ "$ACCOUNTING" = 1 ] && { new_dbd=$(gen_dbd_conf) || fail "cannot write slurmdbd.conf"; }
    [ "$new_conf" = "$(cat "$CONF" 2>/dev/null)" ] || changed=1
    if [ "$ACCOUNTING" = 1 ] && [ "$new_dbd" != "$(cat "$DBD_CONF" 2>/dev/null)" ]; then changed=1; fi

    if is_up; then
        if [ $changed = 0 ]; then
            log "already up in $DIR (nothing done)"
            print_env
            return 0
        fi
        log "configuration changed: restarting the cluster in $DIR"
    elif [ -f "$PIDS" ]; then
        log "cluster in $DIR is partial or dead: stopping what is left and starting again"
    fi
    stop_all quiet

    for p in "$CTLD_PORT" "$SLURMD_PORT"; do
        port_listening "$p" && { log "port $p is already in use:"; port_holder "$p"; exit 1; }
    done
    if [ "$ACCOUNTING" = 1 ]; then
        for p in "$DBD_PORT" "$DB_PORT"; do
            port_listening "$p" && { log "port $p is already in use:"; port_holder "$p"; exit 1; }
        done
    fi
    getent hosts "$(hostname)" >/dev/null 2>&1 \
        || log "warning: hostname '$(hostname)' does not resolve; srun inside jobs may fail"

    printf '%s\n' "$new_conf" >"$CONF" && chmod 644 "$CONF" || fail "cannot write $CONF"
    if [ "$ACCOUNTING" = 1 ]; then
        (umask 077; printf '%s\n' "$new_dbd" >"$DBD_CONF") && chmod 600 "$DBD_CONF" || fail "cannot write $DBD_CONF"
    else
        rm -f "$DBD_CONF"
    fi
    if [ "$KEEP_STATE" != 1 ]; then
        # Always start empty: stale state from a killed cluster reuses job IDs (pitfall 12).
        rm -rf "${DIR:?}"/state "${DIR:?}"/spool
        mkdir -p "$DIR/state" "$DIR/spool"
        for d in munged mariadb slurmdbd slurmctld slurmd smoke; do : >"$DIR/log/$d.log"; done
    fi
    : >"$PIDS"

    STARTING=1
    start_munged
    if [ "$ACCOUNTING" = 1 ]; then
        start_mariadbd
        start_slurmdbd
    fi
    start_slurmctld
    start_slurmd
    if [ "$SMOKE" = 1 ]; then
        d=$(now_ms)
        timeout "$TIMEOUT" srun -N1 -n1 -t 1 true </dev/null >>"$DIR/log/smoke.log" 2>&1 9>&- \
            || fail "smoke test 'srun true' failed"
        step_done smoke "$d"
    fi
    STARTING=0
    log "up in $(secs_since "$t0") s: $DIR ($(join_steps))"
    print_env
}

# ---------------------------------------------------------------- stopping
queue_empty() {
    local out
    daemon_alive slurmctld || return 2
    out=$(squeue -h -o %i 2>/dev/null) || return 1
    [ -z "$out" ]
}

# PIDs of slurmstepd processes of this cluster: they hold sockets in DIR/spool.
stepd_pids() {
    local inodes pid
    inodes=$(awk -v pre="$DIR/spool/" 'FNR > 1 && index($8, pre) == 1 { print "socket:[" $7 "]" }' /proc/net/unix 2>/dev/null)
    [ -n "$inodes" ] || return 0
    find /proc/[0-9]*/fd -maxdepth 1 -type l -printf '%h %l\n' 2>/dev/null \
        | awk 'NR == FNR { want[$1] = 1; next } ($2 in want) { split($1, a, "/"); print a[3] }' \
            <(printf '%s\n' "$inodes") - \
        | sort -u \
        | while read -r pid; do alive "$pid" slurmstepd && echo "$pid"; done
}

# descendants PID: all processes below PID (from the ppid field of /proc/*/stat).
descendants() {
    local f s rest pid ppid queue children=() out=()
    declare -A kids=()
    for f in /proc/[0-9]*/stat; do
        read -r s 2>/dev/null <"$f" || continue
        rest=${s##*) }
        read -r _ ppid _ <<<"$rest"
        pid=${f#/proc/}
        pid=${pid%/stat}
        kids[$ppid]+=" $pid"
    done
    queue=("$1")
    while [ ${#queue[@]} -gt 0 ]; do
        pid=${queue[0]}
        queue=("${queue[@]:1}")
        read -r -a children <<<"${kids[$pid]:-}"
        for s in "${children[@]}"; do
            out+=("$s")
            queue+=("$s")
        done
    done
    [ ${#out[@]} -eq 0 ] || printf '%s\n' "${out[@]}"
}

process_gone() {
    local p s
    for p in "$@"; do
        read -r s 2>/dev/null <"/proc/$p/stat" || continue
        [[ $s =~ \)\ [ZXx]\  ]] || return 1
    done
    return 0
}

# kill_stepd PID: an orphaned slurmstepd (its slurmd is gone) ignores SIGTERM and would leave
# the job's processes behind: kill the stepd and the job's processes together.
kill_stepd() {
    local pid=$1 quiet=$2 tree
    alive "$pid" slurmstepd || return 0
    mapfile -t tree < <(descendants "$pid")
    kill -KILL "$pid" "${tree[@]}" 2>/dev/null
    wait_until "slurmstepd (pid $pid) and its job to die" 5 process_gone "$pid" "${tree[@]}" \
        || log "warning: slurmstepd (pid $pid) or its job survived SIGKILL"
    [ "$quiet" = quiet ] || log "killed slurmstepd (pid $pid) and ${#tree[@]} job process(es)"
}

stop_pid() {
    local name=$1 pid=$2 quiet=$3
    alive "$pid" "$name" || return 0
    kill -TERM "$pid" 2>/dev/null
    if ! wait_until "$name (pid $pid) to exit" "$TIMEOUT" dead "$pid" "$name"; then
        log "sending SIGKILL to $name (pid $pid)"
        kill -KILL "$pid" 2>/dev/null
        wait_until "$name (pid $pid) to die" 5 dead "$pid" "$name" || log "warning: $name (pid $pid) survived SIGKILL"
    fi
    [ "$quiet" = quiet ] || log "stopped $name (pid $pid)"
}

# stop_all [quiet]: cancel jobs, stop the recorded daemons (newest first) and leftovers.
stop_all() {
    local quiet=${1:-} ids d pid i p left=0 t0
    t0=$(now_ms)
    [ -f "$PIDS" ] || return 0
    if daemon_alive slurmctld && [ -f "$CONF" ]; then
        ids=$(squeue -h -o %F 2>/dev/null | sort -u | tr '\n' ' ')
        if [ -n "${ids// /}" ]; then
            [ "$quiet" = quiet ] || log "cancelling jobs: $ids"
            # shellcheck disable=SC2086  # word splitting wanted: one argument per job
            scancel $ids 2>/dev/null
            wait_until "jobs to finish" 30 queue_empty || log "warning: jobs still queued; stopping anyway"
        fi
    fi
    for (( i = ${#ALL_DAEMONS[@]} - 1; i >= 0; i-- )); do
        d=${ALL_DAEMONS[i]}
        pid=$(pid_of "$d")
        [ -n "$pid" ] && stop_pid "$d" "$pid" "$quiet"
    done
    for pid in $(stepd_pids); do
        log "warning: slurmstepd (pid $pid) of this cluster was still running; stopping it"
        kill_stepd "$pid" "$quiet"
    done
    for p in "$CTLD_PORT" "$SLURMD_PORT" "$DBD_PORT" "$DB_PORT"; do
        if port_listening "$p"; then
            log "note: port $p is still bound (by another process?)"
            port_holder "$p"
            left=1
        fi
    done
    rm -f "$PIDS"
    [ "$quiet" = quiet ] || log "down in $(secs_since "$t0") s: $DIR"
    return $left
}

do_down() {
    if ! own_dir; then
        log "no cluster of $PROG in $DIR: nothing to stop"
        return 0
    fi
    [ "$(id -u)" = 0 ] || { log "down needs root"; exit 1; }
    take_lock
    if [ ! -f "$PIDS" ]; then
        log "not running: $DIR"
        return 0
    fi
    stop_all
    return 0
}

do_purge() {
    if [ ! -e "$DIR" ]; then
        log "$DIR does not exist: nothing to purge"
        return 0
    fi
    own_dir || { log "$DIR was not created by $PROG (no $MARKER); not deleting it"; exit 1; }
    do_down
    rm -rf -- "${DIR:?}" || { log "cannot delete $DIR"; exit 1; }
    log "purged $DIR"
}

do_status() {
    local d pid st rc=0
    if ! own_dir; then
        echo "no cluster in $DIR"
        return 1
    fi
    # Report the daemons of the cluster as configured, whatever the knobs say now.
    if [ -f "$CONF" ] && ! grep -q '^AccountingStorageType=accounting_storage/slurmdbd' "$CONF"; then
        DAEMONS=(munged slurmctld slurmd)
    elif [ -f "$CONF" ]; then
        DAEMONS=("${ALL_DAEMONS[@]}")
    fi
    echo "dir: $DIR"
    echo "SLURM_CONF=$CONF"
    for d in "${DAEMONS[@]}"; do
        pid=$(pid_of "$d")
        if [ -n "$pid" ] && alive "$pid" "$d"; then
            printf '  %-10s running (pid %s)\n' "$d" "$pid"
        else
            printf '  %-10s stopped\n' "$d"
        fi
    done
    if is_up; then
        st=$(node_state)
        echo "cluster: up (node $NODE: $st, $(squeue -h 2>/dev/null | wc -l) job(s) in queue)"
    else
        echo "cluster: down"
        rc=1
    fi
    return $rc
}

do_env() {
    [ -f "$CONF" ] || { log "no slurm.conf in $DIR (run '$PROG up $DIR' first)"; exit 1; }
    printf 'export SLURM_CONF=%q\n' "$CONF"
}

case $CMD in
    up) do_up ;;
    down) do_down ;;
    status) do_status; exit $? ;;
    env) do_env ;;
    purge) do_purge ;;
esac
