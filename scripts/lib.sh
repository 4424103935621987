# Shared helpers for scripts/quickstart, scripts/test and the benchmarks (sourced, not run).

# Runs a command as root: directly when we are root, else through sudo.
as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# Installs Debian packages that are missing. Prints a clear message off Debian/Ubuntu.
ensure_packages() {
    local missing=()
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "error: missing packages: ${missing[*]}; install them with your package manager (Debian/Ubuntu: apt-get install ${missing[*]})" >&2
        return 1
    fi
    echo "installing: ${missing[*]}" >&2
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Python clients (kafka-python, confluent-kafka) in a project-local .venv, created if missing.
ensure_python_clients() {
    if ! python3 -c 'import ensurepip' >/dev/null 2>&1; then
        ensure_packages python3-venv
    fi
    if ! .venv/bin/python -c 'import kafka, confluent_kafka' >/dev/null 2>&1; then
        rm -rf .venv
        python3 -m venv .venv
        .venv/bin/pip install --quiet --disable-pip-version-check kafka-python==3.0.12 confluent-kafka==2.16.1
    fi
}

# Answers 0 when a ZooKeeper serves on 127.0.0.1:$1 (the 'srvr' four-letter word).
zk_serving() {
    local out
    out=$(timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1; printf srvr >&3; cat <&3" 2>/dev/null) || return 1
    grep -q "Mode:" <<<"$out"
}

# Starts a standalone ZooKeeper from Debian's package in the background.
# Usage: start_zookeeper PORT DIR  (sets ZK_PID)
start_zookeeper() {
    local port=$1 dir=$2
    mkdir -p "$dir/data"
    cat >"$dir/zoo.cfg" <<CFG
tickTime=2000
initLimit=10
syncLimit=5
dataDir=$dir/data
clientPort=$port
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=*
CFG
    java -Xmx256m -XX:+UseSerialGC \
        -cp /usr/share/java/zookeeper.jar:/usr/share/java/slf4j-api.jar:/usr/share/java/slf4j-simple.jar \
        org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg" >"$dir/zookeeper.log" 2>&1 &
    ZK_PID=$!
}

# Waits until "$@" succeeds, at most $1 seconds. Usage: wait_for SECONDS WHAT CMD...
wait_for() {
    local seconds=$1 what=$2
    shift 2
    local deadline=$((SECONDS + seconds))
    until "$@"; do
        if [ $SECONDS -ge $deadline ]; then
            echo "error: timed out after ${seconds}s waiting for $what" >&2
            return 1
        fi
        sleep 0.2
    done
}

# Prints why this machine cannot run the docker-compose test's containers (nothing when it can):
# an engine that answers is enough; else starting dockerd needs root and mounted cgroups.
docker_cannot_run() {
    if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
        return 0
    fi
    if [ "$(id -u)" != 0 ]; then
        echo "no Docker engine answers and starting dockerd needs root"
    elif [ ! -d /sys/fs/cgroup/memory ] && [ ! -f /sys/fs/cgroup/cgroup.controllers ]; then
        echo "no cgroup hierarchy is mounted under /sys/fs/cgroup, so containers cannot run"
    fi
}
