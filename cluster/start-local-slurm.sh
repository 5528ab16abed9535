#!/usr/bin/env bash
# Start a one-node SLURM cluster on 127.0.0.1: a private munged, MariaDB, slurmdbd, slurmctld and
# slurmd, with fake GPUs, so that `snakemake --profile profiles/slurm` can be tried (and tested)
# on one machine. Debian 12 (slurm-wlm 22.05), as root.
#
#   cluster/start-local-slurm.sh [--install]     # --install: apt-get the packages when missing
#                                                # (exit status 2: not root, or no packages)
#   snakemake --profile profiles/slurm --profile profiles/local-slurm
#   cluster/stop-local-slurm.sh                  # stops what this script started, by recorded PID
#
# Everything lives in $TRIMBENCH_SLURM_DIR (default /tmp/trimbench-slurm): configuration, state,
# logs, the PIDs of the daemons started here. The machine's munge key is not used. The one thing
# outside it is /etc/slurm/slurm.conf, a link to our slurm.conf made only where no SLURM is
# configured: the executor's job step drops SLURM_CONF before it calls srun, so srun inside a job
# reads the default path. Running the script again while the cluster is up changes nothing.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
STATE=${TRIMBENCH_SLURM_DIR:-/tmp/trimbench-slurm}
PARTITION=${TRIMBENCH_SLURM_PARTITION:-local}
GPUS=${TRIMBENCH_SLURM_GPUS:-2}
CTLD_PORT=6817 SLURMD_PORT=6818 DBD_PORT=6819 MARIADB_PORT=3307
# Memory left to the OS and the snakemake process beside the jobs.
HEADROOM_MB=2048
PACKAGES=(slurmctld slurmd slurm-client slurmdbd munge mariadb-server mariadb-client)
COMMANDS=(slurmctld slurmd slurmdbd sbatch sacct sacctmgr munged mungekey mariadbd mariadb-install-db mariadb)
# Start order; stop-local-slurm.sh stops them in reverse.
DAEMONS=(munged mariadbd slurmdbd slurmctld slurmd)
SYSTEM_CONF=/etc/slurm/slurm.conf

say() { echo "start-local-slurm: $*" >&2; }
die() { say "$*"; exit 1; }
# Exit status 2: the packages are missing and cannot be installed here (the tests skip then).
no_packages() { say "$*"; exit 2; }

alive() {  # alive NAME: the daemon whose PID we recorded is still that daemon
    local pid_file="$STATE/pids/$1.pid" pid
    [ -f "$pid_file" ] || return 1
    pid=$(cat "$pid_file")
    [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "$1"
}

missing_commands() {
    local cmd
    for cmd in "${COMMANDS[@]}"; do
        command -v "$cmd" >/dev/null || echo "$cmd"
    done
}

install_packages() {
    command -v apt-get >/dev/null || no_packages "packages missing and no apt-get: install ${PACKAGES[*]}"
    # Package scripts must not start the machine's own daemons: we start ours, with our config.
    local policy=/usr/sbin/policy-rc.d added_policy=""
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && added_policy=1
    fi
    say "installing ${PACKAGES[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${PACKAGES[@]}" >/dev/null
    local status=$?
    [ -z "$added_policy" ] || rm -f "$policy"
    return $status
}

wait_for() {  # wait_for SECONDS WHAT COMMAND...: retry COMMAND until it succeeds
    local seconds=$1 what=$2
    local deadline=$((SECONDS + seconds))
    shift 2
    until "$@" >/dev/null 2>&1; do
        [ $SECONDS -lt $deadline ] || die "$what did not come up in $seconds s; see $STATE/log/"
        sleep 0.2
    done
}

start_daemon() {  # start_daemon NAME COMMAND...: in the foreground of its own session, PID recorded
    local name=$1
    shift
    setsid "$@" >"$STATE/log/$name.out" 2>&1 </dev/null 9>&- &
    echo $! >"$STATE/pids/$name.pid"
}

fill_template() {  # fill_template TEMPLATE OUTPUT
    sed -e "s|@STATE@|$STATE|g" -e "s|@HOST@|$HOST|g" -e "s|@CPUS@|$CPUS|g" \
        -e "s|@MEMORY_MB@|$MEMORY_MB|g" -e "s|@GPUS@|$GPUS|g" -e "s|@LAST_GPU@|$((GPUS - 1))|g" \
        -e "s|@PARTITION@|$PARTITION|g" -e "s|@CTLD_PORT@|$CTLD_PORT|g" -e "s|@SLURMD_PORT@|$SLURMD_PORT|g" \
        -e "s|@DBD_PORT@|$DBD_PORT|g" -e "s|@MARIADB_PORT@|$MARIADB_PORT|g" \
        -e "s|@DB_PASSWORD@|$DB_PASSWORD|g" "$1" >"$2"
}

[ "$(id -u)" = 0 ] || no_packages "needs root (the daemons run as root, MariaDB as mysql)"
export PATH=$PATH:/usr/sbin:/sbin
# One start at a time (two test workers, a test session beside CI's start): a second one waits,
# then finds the cluster running. Unlocked at exit: the daemons inherit the descriptor.
exec 9>"$STATE.lock"
flock 9
trap 'flock -u 9' EXIT
if [ -n "$(missing_commands)" ]; then
    [ "${1:-}" = "--install" ] || no_packages "missing commands: $(missing_commands | xargs); run with --install"
    install_packages || no_packages "could not install ${PACKAGES[*]}"
    [ -z "$(missing_commands)" ] || no_packages "still missing after install: $(missing_commands | xargs)"
fi

running=0
for daemon in "${DAEMONS[@]}"; do alive "$daemon" && running=$((running + 1)); done
if [ "$running" = "${#DAEMONS[@]}" ]; then
    say "already running (state in $STATE)"
    exit 0
fi
[ "$running" = 0 ] || die "partly running ($running of ${#DAEMONS[@]} daemons): run cluster/stop-local-slurm.sh first"
if [ -e "$SYSTEM_CONF" ] || [ -L "$SYSTEM_CONF" ]; then
    [ "$(readlink "$SYSTEM_CONF")" = "$STATE/etc/slurm.conf" ] \
        || die "$SYSTEM_CONF exists: this machine has a SLURM configuration of its own (use that cluster)"
fi
for port in $CTLD_PORT $SLURMD_PORT $DBD_PORT $MARIADB_PORT; do
    ! (ss -ltn "sport = :$port" 2>/dev/null | grep -q LISTEN) || die "port $port is in use by another program"
done
# The state of an earlier run is cleared; a folder this script did not make is never removed.
if [ -d "$STATE" ] && [ -n "$(ls -A "$STATE")" ] && [ ! -f "$STATE/.trimbench-local-slurm" ]; then
    die "$STATE exists and was not made by this script: set TRIMBENCH_SLURM_DIR to another folder"
fi

started_ms=$(($(date +%s%N) / 1000000))
HOST=$(hostname -s)
CPUS=$(nproc)
MEMORY_MB=$(($(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo) - HEADROOM_MB))
DB_PASSWORD=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
rm -rf "$STATE"
mkdir -p "$STATE"
touch "$STATE/.trimbench-local-slurm"
mkdir -p "$STATE"/{etc,munge,pids,run,log,dev,spool/slurmctld,spool/slurmd,mysql/data,mysql/log,mysql/run}
# MariaDB writes its data, socket and error log as mysql (a root-owned log dir makes it die silently).
chown -R mysql:mysql "$STATE/mysql"
for i in $(seq 0 $((GPUS - 1))); do mknod "$STATE/dev/gpu$i" c 1 3; done
fill_template "$HERE/slurm.conf.in" "$STATE/etc/slurm.conf"
fill_template "$HERE/gres.conf.in" "$STATE/etc/gres.conf"
fill_template "$HERE/slurmdbd.conf.in" "$STATE/etc/slurmdbd.conf"
chmod 600 "$STATE/etc/slurmdbd.conf"
export SLURM_CONF=$STATE/etc/slurm.conf
mkdir -p "$(dirname "$SYSTEM_CONF")"
ln -sfn "$SLURM_CONF" "$SYSTEM_CONF"

MUNGE_SOCKET=$STATE/munge/munge.socket
mungekey --create --keyfile="$STATE/munge/munge.key" >/dev/null
start_daemon munged munged --foreground --force --socket="$MUNGE_SOCKET" --key-file="$STATE/munge/munge.key" \
    --pid-file="$STATE/run/munged.pid" --seed-file="$STATE/munge/munged.seed" --log-file="$STATE/log/munged.log"
wait_for 10 munged bash -c "munge --socket='$MUNGE_SOCKET' -n | unmunge --socket='$MUNGE_SOCKET'"

MARIADB_SOCKET=$STATE/mysql/run/mariadbd.sock
mariadb-install-db --no-defaults --user=mysql --datadir="$STATE/mysql/data" --skip-test-db \
    --auth-root-authentication-method=socket >"$STATE/log/mariadb-install-db.out" 2>&1 \
    || die "mariadb-install-db failed; see $STATE/log/mariadb-install-db.out"
start_daemon mariadbd mariadbd --no-defaults --user=mysql --datadir="$STATE/mysql/data" \
    --socket="$MARIADB_SOCKET" --port=$MARIADB_PORT --bind-address=127.0.0.1 --skip-name-resolve \
    --pid-file="$STATE/mysql/run/mariadbd.pid" --log-error="$STATE/mysql/log/error.log" \
    --innodb-buffer-pool-size=64M --innodb-lock-wait-timeout=900
wait_for 30 mariadbd mariadb-admin --no-defaults --socket="$MARIADB_SOCKET" ping
mariadb --no-defaults --socket="$MARIADB_SOCKET" -u root -e \
    "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASSWORD';
     GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"

start_daemon slurmdbd slurmdbd -D
wait_for 30 slurmdbd sacctmgr -n list cluster
sacctmgr -i add cluster trimbench-local >/dev/null

start_daemon slurmctld slurmctld -D -i
wait_for 30 slurmctld scontrol ping
start_daemon slurmd slurmd -D -N "$HOST"
wait_for 30 "slurmd (node $HOST idle)" bash -c "sinfo -h -N -n '$HOST' -o %T | grep -qx idle"

for daemon in "${DAEMONS[@]}"; do alive "$daemon" || die "$daemon exited; see $STATE/log/"; done
elapsed_ms=$(($(date +%s%N) / 1000000 - started_ms))
say "up in $((elapsed_ms / 1000)).$((elapsed_ms % 1000 / 100)) s: partition '$PARTITION', node $HOST" \
    "($CPUS CPUs, $MEMORY_MB MB, $GPUS fake GPUs); state in $STATE"
