#!/bin/bash
cd /work/wt-wire
set -x
date
uptime
/tmp/wire/master sweep --config experiments/wire_equal4.yaml --out /tmp/wire/equal4 > /tmp/wire/equal4.log 2>&1
echo "equal4 rc=$?"
date; uptime
/tmp/wire/master sweep --config experiments/wire_quickstart.yaml --out /tmp/wire/quickstart > /tmp/wire/quickstart.log 2>&1
echo "quickstart rc=$?"
date; uptime
