#!/bin/bash
# Writes a standalone zoo.cfg from the ZOO_* variables (the official image's names) and runs
# the server in the foreground as PID 1, so `docker stop` reaches it.
set -euo pipefail
cat >/conf/zoo.cfg <<CFG
tickTime=${ZOO_TICK_TIME}
initLimit=10
syncLimit=5
dataDir=/data
dataLogDir=/datalog
clientPort=2181
maxClientCnxns=${ZOO_MAX_CLIENT_CNXNS}
admin.enableServer=${ZOO_ADMINSERVER_ENABLED}
4lw.commands.whitelist=${ZOO_4LW_COMMANDS_WHITELIST}
CFG
exec java -Xmx512m -XX:+UseSerialGC -Dzookeeper.log.dir=/datalog \
    -cp /usr/share/java/zookeeper.jar:/usr/share/java/slf4j-api.jar:/usr/share/java/slf4j-simple.jar \
    org.apache.zookeeper.server.quorum.QuorumPeerMain /conf/zoo.cfg
