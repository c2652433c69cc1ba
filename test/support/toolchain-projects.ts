/**
 * Small projects of each ecosystem the sandbox image carries, as a newcomer's would look: a manifest,
 * some code, a test, and one dependency from the ecosystem's registry (the fixture each registry stub
 * serves). Each is written into a workspace and tested with the project's own test command.
 */
import { chownSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { CARGO_FIXTURE_ANSWER, CARGO_FIXTURE_CRATE } from "./egress/cargo-registry-stub.js";
import { GO_FIXTURE_ANSWER, GO_FIXTURE_MODULE, GO_FIXTURE_VERSION } from "./egress/go-proxy-stub.js";
import {
  NPM_FIXTURE_EXPORT,
  NPM_FIXTURE_PACKAGE,
  NPM_FIXTURE_VERSION,
  type NpmRegistryStub,
} from "./egress/npm-registry-stub.js";
import { PIP_FIXTURE_MODULE, PIP_FIXTURE_PROJECT, PIP_FIXTURE_VALUE } from "./egress/pip-index-stub.js";

/** The Node project's command (its project depends on the registry stub, the command does not). */
const NODE_COMMAND = "npm ci && npm test";

export interface Project {
  /** Path → content. */
  files: Record<string, string>;
  /** The project's own command, as its README would give it. */
  command: string;
  /** What the command's output shows when the tests ran and passed. */
  passed: RegExp;
}

export function writeProject(root: string, project: Project): void {
  for (const [path, text] of Object.entries(project.files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
}

/** Gives `path` and everything below it to `uid` (its group too): the sandbox user owns the project. */
export function chownTree(path: string, uid: number): void {
  chownSync(path, uid, uid);
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    const child = join(path, entry.name);
    if (entry.isDirectory()) chownTree(child, uid);
    else chownSync(child, uid, uid);
  }
}

/**
 * A Node library that asks for Node >= 22, with a devDependency pinned in its package-lock.json (the
 * tarball's URL and integrity as the registry `npm` names gives them), tested with `node --test`.
 */
export function nodeProject(npm: Pick<NpmRegistryStub, "tarballUrl" | "integrity">): Project {
  const devDependencies = { [NPM_FIXTURE_PACKAGE]: `^${NPM_FIXTURE_VERSION}` };
  const root = { name: "harness-node-project", version: "1.0.0", engines: { node: ">=22" } };
  return {
    files: {
      "package.json": JSON.stringify(
        { ...root, private: true, scripts: { test: "node --test" }, devDependencies },
        null,
        2,
      ),
      "package-lock.json": JSON.stringify(
        {
          name: root.name,
          version: root.version,
          lockfileVersion: 3,
          requires: true,
          packages: {
            "": { ...root, devDependencies },
            [`node_modules/${NPM_FIXTURE_PACKAGE}`]: {
              version: NPM_FIXTURE_VERSION,
              resolved: npm.tarballUrl,
              integrity: npm.integrity,
              dev: true,
              license: "MIT",
            },
          },
        },
        null,
        2,
      ),
      "index.js": "exports.add = (a, b) => a + b;\n",
      "test/add.test.js": [
        'const test = require("node:test");',
        'const assert = require("node:assert");',
        'const { add } = require("..");',
        `test("adds", () => assert.strictEqual(add(2, 3), 5));`,
        `test("the devDependency is installed", () => assert.strictEqual(require(${JSON.stringify(NPM_FIXTURE_PACKAGE)}), ${JSON.stringify(NPM_FIXTURE_EXPORT)}));`,
        `test("runs on the Node it asks for", () => assert.ok(Number(process.versions.node.split(".")[0]) >= 22));`,
        "",
      ].join("\n"),
    },
    command: NODE_COMMAND,
    passed: /pass 3\n\S* fail 0\n/,
  };
}

/** A Python package with a C extension, built in a venv with its dependency from the index. */
export const pythonProject: Project = {
  files: {
    "setup.py": [
      "from setuptools import Extension, setup",
      "",
      "setup(",
      '    name="fastadd",',
      '    version="0.1",',
      '    ext_modules=[Extension("fastadd", ["fastadd.c"])],',
      `    install_requires=[${JSON.stringify(PIP_FIXTURE_PROJECT)}],`,
      ")",
      "",
    ].join("\n"),
    "fastadd.c": [
      "#define PY_SSIZE_T_CLEAN",
      "#include <Python.h>",
      "",
      "static PyObject *add(PyObject *self, PyObject *args) {",
      "    long a, b;",
      '    if (!PyArg_ParseTuple(args, "ll", &a, &b)) return NULL;',
      "    return PyLong_FromLong(a + b);",
      "}",
      "",
      'static PyMethodDef methods[] = {{"add", add, METH_VARARGS, "a + b"}, {NULL, NULL, 0, NULL}};',
      'static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "fastadd", NULL, -1, methods};',
      "PyMODINIT_FUNC PyInit_fastadd(void) { return PyModule_Create(&module); }",
      "",
    ].join("\n"),
    "tests/__init__.py": "",
    "tests/test_fastadd.py": [
      "import unittest",
      "",
      "import fastadd",
      `import ${PIP_FIXTURE_MODULE}`,
      "",
      "",
      "class FastAdd(unittest.TestCase):",
      "    def test_add(self):",
      "        self.assertEqual(fastadd.add(2, 3), 5)",
      "",
      "    def test_dependency(self):",
      `        self.assertEqual(${PIP_FIXTURE_MODULE}.VALUE, ${JSON.stringify(PIP_FIXTURE_VALUE)})`,
      "",
    ].join("\n"),
  },
  command: "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/python -m unittest -v",
  passed: /Ran 2 tests[\s\S]*\nOK\n?$/,
};

/** A Go module with a dependency from the module proxy, its go.sum given (`goSum`, the stub's lines). */
export function goProject(goSum: string): Project {
  return {
    files: {
      "go.mod": `module example.com/app\n\ngo 1.22\n\nrequire ${GO_FIXTURE_MODULE} ${GO_FIXTURE_VERSION}\n`,
      "go.sum": goSum,
      "app.go": `package app\n\nimport "${GO_FIXTURE_MODULE}"\n\nfunc Greeting() string { return harnessfix.Answer() }\n`,
      "app_test.go": [
        "package app",
        "",
        'import "testing"',
        "",
        "func TestGreeting(t *testing.T) {",
        `\tif got := Greeting(); got != ${JSON.stringify(GO_FIXTURE_ANSWER)} {`,
        '\t\tt.Fatalf("got %q", got)',
        "\t}",
        "}",
        "",
      ].join("\n"),
    },
    command: "go test ./...",
    passed: /^ok\s+example\.com\/app\s/m,
  };
}

/** A Rust crate with a dependency from the crate registry. */
export const rustProject: Project = {
  files: {
    "Cargo.toml": `[package]\nname = "app"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n${CARGO_FIXTURE_CRATE} = "1"\n`,
    "src/lib.rs": [
      `pub fn greeting() -> &'static str {`,
      `    ${CARGO_FIXTURE_CRATE}::answer()`,
      "}",
      "",
      "#[cfg(test)]",
      "mod tests {",
      "    #[test]",
      "    fn greets() {",
      `        assert_eq!(super::greeting(), ${JSON.stringify(CARGO_FIXTURE_ANSWER)});`,
      "    }",
      "}",
      "",
    ].join("\n"),
  },
  command: "cargo test",
  passed: /test tests::greets \.\.\. ok/,
};

/** A Maven project with JUnit 4 from the repository (and Maven's own plugins with it). */
export const mavenProject: Project = {
  files: {
    "pom.xml": `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.harness</groupId>
  <artifactId>app</artifactId>
  <version>1.0</version>
  <properties>
    <maven.compiler.source>17</maven.compiler.source>
    <maven.compiler.target>17</maven.compiler.target>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencies>
    <dependency><groupId>junit</groupId><artifactId>junit</artifactId><version>4.13.2</version><scope>test</scope></dependency>
  </dependencies>
</project>
`,
    "src/main/java/dev/harness/App.java":
      "package dev.harness;\n\npublic class App {\n  public static int add(int a, int b) { return a + b; }\n}\n",
    "src/test/java/dev/harness/AppTest.java": [
      "package dev.harness;",
      "",
      "import static org.junit.Assert.assertEquals;",
      "",
      "import org.junit.Test;",
      "",
      "public class AppTest {",
      "  @Test",
      "  public void adds() { assertEquals(5, App.add(2, 3)); }",
      "}",
      "",
    ].join("\n"),
  },
  command: "mvn -B test",
  passed: /Tests run: 1, Failures: 0, Errors: 0, Skipped: 0[\s\S]*BUILD SUCCESS/,
};

/** A C library with a Makefile and a test program: no registry at all. */
export const cProject: Project = {
  files: {
    Makefile: [
      "CFLAGS ?= -O2 -Wall -Werror",
      "",
      "all: test",
      "",
      "libadd.a: add.o",
      "\t$(AR) rcs $@ $^",
      "",
      "test: test.o libadd.a",
      "\t$(CC) -o $@ test.o -L. -ladd",
      "",
      "clean:",
      "\trm -f *.o *.a test",
      "",
    ].join("\n"),
    "add.h": "int add(int a, int b);\n",
    "add.c": '#include "add.h"\nint add(int a, int b) { return a + b; }\n',
    "test.c": [
      "#include <stdio.h>",
      '#include "add.h"',
      "int main(void) {",
      '  if (add(2, 3) != 5) { puts("FAIL"); return 1; }',
      '  puts("all tests passed");',
      "  return 0;",
      "}",
      "",
    ].join("\n"),
  },
  command: "make && ./test",
  passed: /all tests passed/,
};

/** A project whose `make test` runs its tests (the README's everyday examples). */
export const makeTestProject: Project = {
  files: {
    Makefile: ".PHONY: test\ntest: check\n\t./check\n\ncheck: check.c\n\t$(CC) -Wall -Werror -o $@ $<\n",
    "check.c": '#include <stdio.h>\nint main(void) { puts("all tests passed"); return 0; }\n',
  },
  command: "make test",
  passed: /all tests passed/,
};

/**
 * Each ecosystem's `--allow` preset and its project's command, as docs/toolchains.md shows them
 * (docs-examples.test.ts holds the two together) and toolchain-registries.ts runs them.
 */
export const ecosystemCases: ReadonlyArray<{ name: string; preset: string | undefined; command: string }> = [
  { name: "Node", preset: "npm", command: NODE_COMMAND },
  { name: "Python", preset: "pypi", command: pythonProject.command },
  { name: "Go", preset: "go", command: goProject("").command },
  { name: "Rust", preset: "cargo", command: rustProject.command },
  { name: "Java", preset: "maven", command: mavenProject.command },
  { name: "C", preset: undefined, command: cProject.command },
];
