#!/bin/sh
# Makes a test CA and one broker keystore for the SASL_SSL compose variant, with openssl:
#   docker/tls/gen-certs.sh [DIR]        # DIR defaults to this script's directory
# writes DIR/ca.key, DIR/ca.pem (give ca.pem to clients as ssl.ca.location) and
# DIR/broker.pem (key + certificate + CA: a PEM keystore, ssl.keystore.type PEM) valid for
# kafka1, kafka2, kafka3, localhost and 127.0.0.1. Existing files are replaced. For anything
# but a trial, use certificates from your own CA and keep the keys private.
set -eu
dir=${1:-$(dirname "$0")}
mkdir -p "$dir"
cd "$dir"
openssl req -x509 -newkey rsa:2048 -nodes -days 365 -subj "/CN=kastle test CA" \
  -keyout ca.key -out ca.pem 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=kastle broker" \
  -addext "subjectAltName=DNS:kafka1,DNS:kafka2,DNS:kafka3,DNS:localhost,IP:127.0.0.1" \
  -keyout broker.key -out broker.csr 2>/dev/null
openssl x509 -req -in broker.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 365 \
  -copy_extensions copy -out broker.crt 2>/dev/null
cat broker.key broker.crt ca.pem > broker.pem
rm -f broker.csr broker.key broker.crt ca.srl
# The brokers run as uid 1000 in their containers and read the keystore through a bind mount.
chmod 644 broker.pem
echo "wrote $dir/ca.pem and $dir/broker.pem"
