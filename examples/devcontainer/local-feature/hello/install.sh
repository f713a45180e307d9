#!/bin/sh
set -e
echo "${GREETING:-hello}" > /usr/local/share/hello.txt
