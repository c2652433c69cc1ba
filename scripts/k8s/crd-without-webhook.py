"""Reads agent-sandbox CRD files (YAML) named as arguments and writes them as one JSON List
on stdout, each with conversion strategy None instead of its conversion webhook.

The released CRDs convert between v1alpha1 and v1beta1 through a webhook the controller serves
behind a Service; this cluster routes no Service (no kube-proxy) and the controller runs on the
host with --enable-webhook=false. Every object is stored as v1beta1 and harness reads and writes
only v1beta1, so no conversion is needed.
"""

import json
import sys

import yaml

items = []
for path in sys.argv[1:]:
    with open(path) as file:
        items.extend(doc for doc in yaml.safe_load_all(file) if doc)
for crd in items:
    if crd.get("kind") != "CustomResourceDefinition":
        sys.exit("crd-without-webhook: not a CustomResourceDefinition: %s" % crd.get("kind"))
    crd["spec"]["conversion"] = {"strategy": "None"}
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, sys.stdout)
