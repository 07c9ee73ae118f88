// SPDX-License-Identifier: GPL-2.0
// k8s-validate.mjs FILE...: each document of each Kubernetes manifest,
// checked against the Kubernetes API without a cluster (kubectl's
// validation needs one):
//   - the OpenAPI schema of its kind (types, enums, required fields), with
//     the compiled validators of the npm package kubernetes-models;
//   - every field name known to the API: the document read into the typed
//     models of @kubernetes/client-node (generated from the same OpenAPI
//     definitions) and written back; a field that does not survive the
//     round trip is not in the API (the schemas themselves allow unknown
//     fields, as the API server's non-strict decoding does).
// Prints "ok FILE KIND/NAME" or "invalid FILE KIND/NAME: what" per
// document; exits 1 when any is invalid, 2 on a usage or loading error.
// tests/packaging/run.sh installs the packages (pinned) into
// build/k8s-validate/ and runs a copy of this file there: an ES module
// finds its packages from its own directory.
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";
import { ObjectSerializer } from "@kubernetes/client-node/dist/gen/models/ObjectSerializer.js";

// Where kubernetes-models keeps a kind: "apps/v1" -> apps/v1, "v1" -> v1.
async function modelOf(apiVersion, kind) {
	const mod = await import(`kubernetes-models/${apiVersion}/${kind}`);
	return mod[kind];
}

// The typed model's name: "apps/v1" DaemonSet -> V1DaemonSet.
function typeOf(apiVersion, kind) {
	const v = apiVersion.split("/").pop();
	return v.charAt(0).toUpperCase() + v.slice(1) + kind;
}

// Paths present in a but not in b.
function lost(a, b, path, out) {
	if (Array.isArray(a)) {
		a.forEach((x, i) => lost(x, Array.isArray(b) ? b[i] : undefined, `${path}/${i}`, out));
	} else if (a !== null && typeof a === "object") {
		for (const k of Object.keys(a)) {
			if (b === null || typeof b !== "object" || !(k in b))
				out.push(`${path}/${k}`);
			else
				lost(a[k], b[k], `${path}/${k}`, out);
		}
	}
	return out;
}

if (process.argv.length < 3) {
	console.error("usage: k8s-validate.mjs FILE...");
	process.exit(2);
}
let bad = 0;
for (const file of process.argv.slice(2)) {
	const docs = parseAllDocuments(readFileSync(file, "utf8"));
	for (const doc of docs) {
		if (doc.errors.length) {
			console.log(`invalid ${file}: YAML: ${doc.errors[0].message}`);
			bad++;
			continue;
		}
		const obj = doc.toJS();
		const what = `${obj.kind}/${obj.metadata?.name}`;
		const problems = [];
		const Model = await modelOf(obj.apiVersion, obj.kind).catch(() => null);
		if (!Model) {
			problems.push(`no model of ${obj.apiVersion} ${obj.kind}`);
		} else {
			try {
				new Model(obj).validate();
			} catch (e) {
				const errs = e.errors ?? [{ instancePath: "", message: e.message }];
				for (const x of errs)
					problems.push(`schema: ${x.instancePath || "/"} ${x.message}`);
			}
		}
		const type = typeOf(obj.apiVersion, obj.kind);
		const back = ObjectSerializer.serialize(ObjectSerializer.deserialize(obj, type), type);
		for (const p of lost(obj, back, "", []))
			problems.push(`unknown field ${p} (not in ${type})`);
		if (problems.length) {
			console.log(`invalid ${file} ${what}: ${problems.join("; ")}`);
			bad++;
		} else {
			console.log(`ok ${file} ${what}`);
		}
	}
}
process.exit(bad ? 1 : 0);
