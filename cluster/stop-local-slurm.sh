#!/usr/bin/env bash
# Stop the local cluster started by start-local-slurm.sh: cancel its jobs, then stop the daemons it
# started, newest first, by the PIDs it recorded (never by name: other daemons are left alone),
# and remove the /etc/slurm/slurm.conf link it made.
#
#   cluster/stop-local-slurm.sh          # state in $TRIMBENCH_SLURM_DIR (default /tmp/trimbench-slurm)
set -euo pipefail

STATE=${TRIMBENCH_SLURM_DIR:-/tmp/trimbench-slurm}
DAEMONS=(slurmd slurmctld slurmdbd mariadbd munged)
SYSTEM_CONF=/etc/slurm/slurm.conf
export PATH=$PATH:/usr/sbin:/sbin

say() { echo "stop-local-slurm: $*" >&2; }

recorded_pid() {  # recorded_pid NAME: the PID we recorded, if it still runs that daemon
    local pid_file="$STATE/pids/$1.pid" pid
    [ -f "$pid_file" ] || return 1
    pid=$(cat "$pid_file")
    [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "$1" && echo "$pid"
}

[ -d "$STATE/pids" ] || { say "nothing recorded in $STATE"; exit 0; }
if pid=$(recorded_pid slurmctld); then
    # Jobs run under slurmstepd, outside slurmd's process: cancel them while slurmctld still runs.
    export SLURM_CONF=$STATE/etc/slurm.conf
    jobs=$(squeue -h -o %i 2>/dev/null || true)
    if [ -n "$jobs" ]; then
        say "cancelling jobs $(echo $jobs)"
        scancel $jobs || true
        for _ in $(seq 100); do [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.2; done
    fi
fi
for daemon in "${DAEMONS[@]}"; do
    pid=$(recorded_pid "$daemon") || { rm -f "$STATE/pids/$daemon.pid"; continue; }
    kill -TERM "$pid"
    for _ in $(seq 100); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
    if [ -d "/proc/$pid" ]; then
        say "$daemon ($pid) ignored SIGTERM for 10 s: SIGKILL"
        kill -KILL "$pid"
    fi
    rm -f "$STATE/pids/$daemon.pid"
    say "stopped $daemon ($pid)"
done
if [ "$(readlink "$SYSTEM_CONF" 2>/dev/null)" = "$STATE/etc/slurm.conf" ]; then
    rm -f "$SYSTEM_CONF"
fi
