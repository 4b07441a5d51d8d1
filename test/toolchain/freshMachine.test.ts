// The fresh-machine check: every program the code runs is declared in scripts/systemTools.mjs
// (which the bootstrap installs from), and every declared program comes from where the list
// says: a Debian package the bootstrap installs, the base system, or the bootstrap itself.
// A tool that works here only because someone installed it by hand fails this file.
//
// How the code is read (TypeScript's parser and binder, no type checking): every call of a
// node:child_process function, every `executablePath` property (playwright), every
// `which('<name>')` and every literal absolute path into a bin folder. The program a call
// runs is worked out from the expression: literals, `process.execPath`, `??`/`||`/`?:`,
// path.join's last part, constants, destructuring, the returns of local functions and the
// arguments a function's callers pass for a parameter. `process.env.*` counts as an override
// (not a program). When nothing can be worked out, the call needs a comment on its line or
// the line above: `// spawns: <program>[, <program>]`.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import ts from 'typescript';
import { PROJECT_ROOT } from '../../src/config/index.js';
// @ts-expect-error -- plain-Node module without type declarations
import { missingPackages, SYSTEM_TOOLS, toolsFor } from '../../scripts/systemTools.mjs';

interface SystemTool {
  command?: string;
  file?: string;
  source: 'apt' | 'prerequisite' | 'base' | 'bootstrap' | 'project';
  package?: string;
  path?: string;
  for: ('start' | 'test')[];
  override?: string[];
  why: string;
}

const TOOLS = SYSTEM_TOOLS as SystemTool[];
const DECLARED = new Set(TOOLS.flatMap((t) => (t.command ? [t.command] : [])));
const SCANNED_FOLDERS = ['src', 'activities', 'workflows', 'test', 'scripts', 'bench', 'examples'];
const CODE_EXTENSIONS = ['.ts', '.mts', '.cts', '.mjs', '.js', '.cjs'];
const CHILD_PROCESS_FUNCTIONS = new Set(['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork']);
const SHELL_STRING_FUNCTIONS = new Set(['exec', 'execSync']);

// ---------------------------------------------------------------- reading the code

function codeFiles(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name.startsWith('.')) continue;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) codeFiles(full, out);
    else if (CODE_EXTENSIONS.some((ext) => entry.name.endsWith(ext))) out.push(full);
  }
  return out;
}

/**
 * A program over the project's own files: relative imports are followed, packages are not
 * (fast, and not needed). `virtual` files exist only in memory (the planted tests).
 */
function projectProgram(files: string[], virtual: Map<string, string> = new Map()): ts.Program {
  const options: ts.CompilerOptions = {
    allowJs: true,
    noEmit: true,
    noLib: true,
    types: [],
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
  };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.getSourceFile = (name, version, ...rest) =>
    virtual.has(name) ? ts.createSourceFile(name, virtual.get(name)!, version, true) : getSourceFile.call(host, name, version, ...rest);
  host.fileExists = (name) => virtual.has(name) || fileExists.call(host, name);
  host.readFile = (name) => virtual.get(name) ?? readFile.call(host, name);
  host.resolveModuleNameLiterals = (literals, containingFile, redirected, opts) =>
    literals.map((literal) =>
      literal.text.startsWith('.')
        ? ts.resolveModuleName(literal.text, containingFile, opts, host, undefined, redirected)
        : { resolvedModule: undefined },
    );
  return ts.createProgram(files, options, host);
}

interface ToolUse {
  where: string;
  what: string;
  /** Programs it may run (basenames). */
  names: Set<string>;
  /** Some part could not be worked out (an override, a value from elsewhere). */
  open: boolean;
  /** From a `// spawns:` comment. */
  annotated: string[] | undefined;
}

interface Candidates {
  names: Set<string>;
  open: boolean;
}

const none = (): Candidates => ({ names: new Set(), open: true });
const named = (name: string): Candidates => ({ names: new Set([path.posix.basename(name.replace(/\\/g, '/'))].filter(Boolean)), open: false });
function union(...parts: Candidates[]): Candidates {
  return { names: new Set(parts.flatMap((p) => [...p.names])), open: parts.some((p) => p.open) };
}

class ToolScanner {
  readonly uses: ToolUse[] = [];
  private readonly checker: ts.TypeChecker;
  private readonly calls: ts.CallExpression[] = [];

  constructor(private readonly program: ts.Program, private readonly files: string[]) {
    this.checker = program.getTypeChecker();
    for (const file of this.sourceFiles()) {
      const visit = (node: ts.Node): void => {
        if (ts.isCallExpression(node)) this.calls.push(node);
        ts.forEachChild(node, visit);
      };
      visit(file);
    }
  }

  private sourceFiles(): ts.SourceFile[] {
    return this.files.map((f) => this.program.getSourceFile(f)).filter((f): f is ts.SourceFile => Boolean(f));
  }

  scan(): this {
    for (const file of this.sourceFiles()) {
      const childProcess = childProcessBindings(file);
      const visit = (node: ts.Node): void => {
        if (ts.isCallExpression(node)) {
          const fn = childProcessFunction(node, childProcess);
          if (fn && node.arguments.length > 0) {
            const found = SHELL_STRING_FUNCTIONS.has(fn) ? this.shellCommand(node.arguments[0]) : this.candidates(node.arguments[0], new Set());
            this.record(file, node, `${fn}(${node.arguments[0].getText(file)})`, found);
          }
          if (ts.isIdentifier(node.expression) && node.expression.text === 'which' && node.arguments[0] && ts.isStringLiteralLike(node.arguments[0])) {
            this.record(file, node, `which(${node.arguments[0].getText(file)})`, named(node.arguments[0].text));
          }
        }
        if (ts.isPropertyAssignment(node) && node.name.getText(file) === 'executablePath') {
          this.record(file, node, `executablePath: ${node.initializer.getText(file)}`, this.candidates(node.initializer, new Set()));
        }
        if (ts.isStringLiteralLike(node) && /^\/(?:[\w.+-]+\/)*s?bin\/[\w.+-]+$/.test(node.text)) {
          this.record(file, node, node.getText(file), named(node.text));
        }
        ts.forEachChild(node, visit);
      };
      visit(file);
    }
    return this;
  }

  private record(file: ts.SourceFile, node: ts.Node, what: string, found: Candidates): void {
    const line = file.getLineAndCharacterOfPosition(node.getStart(file)).line;
    const lines = file.text.split('\n');
    const comment = [lines[line], lines[line - 1] ?? ''].map((l) => /\/\/\s*spawns:\s*([\w.+-]+(?:\s*,\s*[\w.+-]+)*)/.exec(l)?.[1]).find(Boolean);
    this.uses.push({
      where: `${path.relative(PROJECT_ROOT, file.fileName)}:${line + 1}`,
      what: what.length > 100 ? `${what.slice(0, 97)}...` : what,
      names: found.names,
      open: found.open,
      annotated: comment?.split(',').map((s) => s.trim()),
    });
  }

  /** The first word of a shell command string. */
  private shellCommand(expr: ts.Expression): Candidates {
    if (ts.isStringLiteralLike(expr)) return named(expr.text.trim().split(/\s+/)[0] ?? '');
    if (ts.isTemplateExpression(expr) && expr.head.text.trim()) return named(expr.head.text.trim().split(/\s+/)[0]);
    return none();
  }

  /** The programs an expression may name. */
  candidates(expr: ts.Node, seen: Set<ts.Node>): Candidates {
    if (seen.has(expr)) return { names: new Set(), open: false };
    seen.add(expr);
    if (ts.isStringLiteralLike(expr)) return named(expr.text);
    if (ts.isTemplateExpression(expr)) {
      const tail = expr.templateSpans[expr.templateSpans.length - 1].literal.text;
      return tail && !tail.endsWith('/') ? named(tail) : none();
    }
    if (ts.isParenthesizedExpression(expr) || ts.isAsExpression(expr) || ts.isNonNullExpression(expr) || ts.isSatisfiesExpression(expr)) {
      return this.candidates(expr.expression, seen);
    }
    if (ts.isBinaryExpression(expr)) {
      const op = expr.operatorToken.kind;
      if (op === ts.SyntaxKind.QuestionQuestionToken || op === ts.SyntaxKind.BarBarToken) return union(this.candidates(expr.left, seen), this.candidates(expr.right, seen));
      if (op === ts.SyntaxKind.AmpersandAmpersandToken) return this.candidates(expr.right, seen);
      return none();
    }
    if (ts.isConditionalExpression(expr)) return union(this.candidates(expr.whenTrue, seen), this.candidates(expr.whenFalse, seen));
    if (ts.isPropertyAccessExpression(expr) || ts.isElementAccessExpression(expr)) {
      const text = expr.getText();
      if (text === 'process.execPath') return named('node');
      if (/^process\.env\b/.test(text)) return none();
      return this.fromSymbol(ts.isPropertyAccessExpression(expr) ? expr.name : expr, seen);
    }
    if (ts.isCallExpression(expr)) return this.callCandidates(expr, seen);
    if (ts.isIdentifier(expr)) {
      if (expr.text === 'undefined') return { names: new Set(), open: false };
      return this.fromSymbol(expr, seen);
    }
    return none();
  }

  private callCandidates(call: ts.CallExpression, seen: Set<ts.Node>): Candidates {
    const callee = call.expression;
    const calleeName = ts.isIdentifier(callee) ? callee.text : ts.isPropertyAccessExpression(callee) ? callee.name.text : '';
    if (calleeName === 'which' && call.arguments[0]) return this.candidates(call.arguments[0], seen);
    if ((calleeName === 'join' || calleeName === 'resolve') && call.arguments.length > 0) return this.candidates(call.arguments[call.arguments.length - 1], seen);
    // [a, b, c].find(isExecutable): one of the elements.
    if (ts.isPropertyAccessExpression(callee) && calleeName === 'find' && ts.isArrayLiteralExpression(callee.expression)) {
      return union(...callee.expression.elements.map((e) => this.candidates(e, seen)));
    }
    const fn = this.functionOf(callee);
    if (fn) return union(...this.returnedExpressions(fn).map((e) => this.candidates(e, seen)));
    return none();
  }

  private symbolOf(node: ts.Node): ts.Symbol | undefined {
    let symbol = this.checker.getSymbolAtLocation(node);
    if (symbol && symbol.flags & ts.SymbolFlags.Alias) {
      try {
        symbol = this.checker.getAliasedSymbol(symbol);
      } catch {
        return undefined;
      }
    }
    return symbol;
  }

  private functionOf(callee: ts.Expression): ts.SignatureDeclaration | undefined {
    const declaration = this.symbolOf(callee)?.declarations?.[0];
    if (!declaration) return undefined;
    if (ts.isFunctionDeclaration(declaration) || ts.isMethodDeclaration(declaration)) return declaration.body ? declaration : undefined;
    if (ts.isVariableDeclaration(declaration) && declaration.initializer && (ts.isArrowFunction(declaration.initializer) || ts.isFunctionExpression(declaration.initializer))) {
      return declaration.initializer;
    }
    return undefined;
  }

  private returnedExpressions(fn: ts.SignatureDeclaration): ts.Expression[] {
    const body = (fn as ts.FunctionLikeDeclaration).body;
    if (!body) return [];
    if (!ts.isBlock(body)) return [body];
    const out: ts.Expression[] = [];
    const visit = (node: ts.Node): void => {
      if (ts.isFunctionLike(node)) return; // returns of nested functions are theirs
      if (ts.isReturnStatement(node) && node.expression) out.push(node.expression);
      ts.forEachChild(node, visit);
    };
    ts.forEachChild(body, visit);
    return out;
  }

  private fromSymbol(node: ts.Node, seen: Set<ts.Node>): Candidates {
    const declaration = this.symbolOf(node)?.declarations?.[0];
    if (!declaration) return none();
    if (ts.isVariableDeclaration(declaration)) return declaration.initializer ? this.candidates(declaration.initializer, seen) : none();
    if (ts.isPropertyAssignment(declaration)) return this.candidates(declaration.initializer, seen);
    if (ts.isShorthandPropertyAssignment(declaration)) {
      const value = this.checker.getShorthandAssignmentValueSymbol(declaration)?.declarations?.[0];
      return value && ts.isVariableDeclaration(value) && value.initializer ? this.candidates(value.initializer, seen) : none();
    }
    if (ts.isBindingElement(declaration)) return this.bindingCandidates(declaration, seen);
    if (ts.isParameter(declaration)) return this.parameterCandidates(declaration, seen);
    if (ts.isFunctionDeclaration(declaration)) return none();
    return none();
  }

  /** `const [cmd, args] = cond ? ['a', …] : ['b', …]` and `const { java } = f()`. */
  private bindingCandidates(element: ts.BindingElement, seen: Set<ts.Node>): Candidates {
    const pattern = element.parent;
    const declaration = pattern.parent;
    if (!ts.isVariableDeclaration(declaration) || !declaration.initializer) return none();
    if (ts.isArrayBindingPattern(pattern)) {
      const index = pattern.elements.indexOf(element);
      return this.elementCandidates(declaration.initializer, index, seen);
    }
    const property = (element.propertyName ?? element.name).getText();
    return this.propertyCandidates(declaration.initializer, property, seen);
  }

  private elementCandidates(expr: ts.Expression, index: number, seen: Set<ts.Node>): Candidates {
    if (ts.isParenthesizedExpression(expr)) return this.elementCandidates(expr.expression, index, seen);
    if (ts.isConditionalExpression(expr)) return union(this.elementCandidates(expr.whenTrue, index, seen), this.elementCandidates(expr.whenFalse, index, seen));
    if (ts.isArrayLiteralExpression(expr) && expr.elements[index]) return this.candidates(expr.elements[index], seen);
    return none();
  }

  private propertyCandidates(expr: ts.Expression, property: string, seen: Set<ts.Node>): Candidates {
    if (ts.isParenthesizedExpression(expr)) return this.propertyCandidates(expr.expression, property, seen);
    if (ts.isObjectLiteralExpression(expr)) {
      const found = expr.properties.find((p) => p.name?.getText() === property);
      if (found && ts.isPropertyAssignment(found)) return this.candidates(found.initializer, seen);
      if (found && ts.isShorthandPropertyAssignment(found)) return this.candidates(found.name, seen);
      return none();
    }
    if (ts.isCallExpression(expr)) {
      const fn = this.functionOf(expr.expression);
      if (fn) return union(...this.returnedExpressions(fn).map((e) => this.propertyCandidates(e, property, seen)));
    }
    return none();
  }

  /** What the callers of the function pass for this parameter (its default too). */
  private parameterCandidates(parameter: ts.ParameterDeclaration, seen: Set<ts.Node>): Candidates {
    const fn = parameter.parent;
    const index = fn.parameters.indexOf(parameter);
    const parts: Candidates[] = parameter.initializer ? [this.candidates(parameter.initializer, seen)] : [];
    let callers = 0;
    for (const call of this.calls) {
      if (this.functionOf(call.expression) !== fn) continue;
      callers += 1;
      const arg = call.arguments[index];
      parts.push(arg ? this.candidates(arg, seen) : { names: new Set(), open: false });
    }
    if (callers === 0 && parts.length === 0) return none();
    return union(...parts);
  }
}

/** Local names bound to node:child_process: functions by name, and namespace/default imports. */
function childProcessBindings(file: ts.SourceFile): { functions: Map<string, string>; namespaces: Set<string> } {
  const functions = new Map<string, string>();
  const namespaces = new Set<string>();
  for (const statement of file.statements) {
    if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
    if (!['node:child_process', 'child_process'].includes(statement.moduleSpecifier.text)) continue;
    const clause = statement.importClause;
    if (clause?.name) namespaces.add(clause.name.text);
    const bindings = clause?.namedBindings;
    if (bindings && ts.isNamespaceImport(bindings)) namespaces.add(bindings.name.text);
    if (bindings && ts.isNamedImports(bindings)) {
      for (const element of bindings.elements) functions.set(element.name.text, (element.propertyName ?? element.name).text);
    }
  }
  return { functions, namespaces };
}

function childProcessFunction(call: ts.CallExpression, bindings: ReturnType<typeof childProcessBindings>): string | undefined {
  const callee = call.expression;
  if (ts.isIdentifier(callee)) {
    const name = bindings.functions.get(callee.text);
    return name && CHILD_PROCESS_FUNCTIONS.has(name) ? name : undefined;
  }
  if (ts.isPropertyAccessExpression(callee) && ts.isIdentifier(callee.expression) && bindings.namespaces.has(callee.expression.text)) {
    return CHILD_PROCESS_FUNCTIONS.has(callee.name.text) ? callee.name.text : undefined;
  }
  return undefined;
}

/** Shell scripts: `command -v <name>` and `exec <name>` with a literal name. */
function shellToolUses(file: string): ToolUse[] {
  const uses: ToolUse[] = [];
  readFileSync(file, 'utf8').split('\n').forEach((line, i) => {
    const code = line.replace(/(^|\s)#.*$/, '');
    for (const m of code.matchAll(/\bcommand\s+-v\s+([\w.+-]+)|(?:^|[;&|]\s*)exec\s+([\w.+/-]+)/g)) {
      const name = m[1] ?? m[2];
      uses.push({ where: `${path.relative(PROJECT_ROOT, file)}:${i + 1}`, what: m[0].trim(), names: named(name).names, open: false, annotated: undefined });
    }
  });
  return uses;
}

function shellScripts(): string[] {
  const found = [path.join(PROJECT_ROOT, '.ci', 'run')].filter(existsSync);
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory() && entry.name !== 'node_modules') walk(full);
      else if (entry.name.endsWith('.sh')) found.push(full);
    }
  };
  for (const folder of SCANNED_FOLDERS) if (existsSync(path.join(PROJECT_ROOT, folder))) walk(path.join(PROJECT_ROOT, folder));
  return found;
}

let scanned: ToolUse[] | undefined;
function toolUses(): ToolUse[] {
  if (!scanned) {
    const files = SCANNED_FOLDERS.filter((f) => existsSync(path.join(PROJECT_ROOT, f))).flatMap((f) => codeFiles(path.join(PROJECT_ROOT, f)));
    scanned = [...new ToolScanner(projectProgram(files), files).scan().uses, ...shellScripts().flatMap(shellToolUses)];
  }
  return scanned;
}

/** The tool uses of code that exists only in memory, as if it were `relativePath`. */
function scanSource(relativePath: string, code: string): ToolUse[] {
  const file = path.join(PROJECT_ROOT, relativePath);
  return new ToolScanner(projectProgram([file], new Map([[file, code]])), [file]).scan().uses;
}

// ---------------------------------------------------------------- where installed tools come from

function onPath(name: string): string | undefined {
  const dirs = (process.env.PATH ?? '').split(path.delimiter).filter(Boolean);
  for (const extra of ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin']) if (!dirs.includes(extra)) dirs.push(extra);
  for (const dir of dirs) {
    const candidate = path.join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      /* next */
    }
  }
  return undefined;
}

const HAS_DPKG = spawnSync('dpkg-query', ['--version'], { stdio: 'ignore' }).status === 0;

/** The Debian packages that own a file, trying it as found, its real path and both without /usr (merged /usr). */
function owningPackages(file: string): string[] {
  const real = (() => {
    try {
      return realpathSync(file);
    } catch {
      return file;
    }
  })();
  const tries = [...new Set([file, real, file.replace(/^\/usr(?=\/)/, ''), real.replace(/^\/usr(?=\/)/, '')])];
  for (const candidate of tries) {
    const res = spawnSync('dpkg-query', ['-S', candidate], { encoding: 'utf8' });
    if (res.status !== 0) continue;
    const owners = res.stdout
      .split('\n')
      .filter((l) => l && !l.startsWith('diversion '))
      .flatMap((l) => l.slice(0, l.lastIndexOf(': ')).split(', '))
      .map((p) => p.replace(/:[\w-]+$/, '').trim());
    if (owners.length) return owners;
  }
  return [];
}

// ---------------------------------------------------------------- tests

describe('fresh machine: the system tools the code runs', () => {
  test('the scan finds the known uses (so a broken scanner cannot pass silently)', () => {
    const uses = toolUses();
    const all = new Set(uses.flatMap((u) => [...u.names, ...(u.annotated ?? [])]));
    for (const name of ['redis-server', 'chromium', 'node', 'tsx', 'temporal', 'go', 'mvn', 'java', 'apt-get', 'sh', 'launch.sh']) {
      assert.ok(all.has(name), `the scan sees ${name} used: ${[...all].sort().join(', ')}`);
    }
  });

  test('planted: an undeclared program, an unknowable one and an annotated one are told apart', () => {
    const uses = scanSource('src/plantedTools.ts', [
      "import { spawn as run, execSync } from 'node:child_process';",
      "import * as cp from 'node:child_process';",
      "import path from 'node:path';",
      "const FFMPEG = process.env.FFMPEG_BIN ?? path.join('/usr/local/bin', 'ffmpeg');",
      'function encoder(custom?: string) { return custom ?? FFMPEG; }',
      "export function a() { run(encoder(), ['-i', '-']); }",
      "export function b() { execSync('lame --quiet in.wav out.mp3'); }",
      'export function c(cfg: { bin: string }) { cp.spawnSync(cfg.bin); }',
      'export function d(cfg: { bin: string }) {',
      '  // spawns: sox',
      '  cp.spawn(cfg.bin);',
      '}',
      "export const browser = { executablePath: '/opt/google/chrome/chrome' };",
    ].join('\n'));
    const summary = uses.map((u) => `${u.where.replace(/^.*:/, 'line ')} ${[...u.names].join(',') || '?'}${u.annotated ? ` spawns:${u.annotated.join(',')}` : ''}`);
    assert.deepEqual(summary, ['line 6 ffmpeg', 'line 7 lame', 'line 8 ?', 'line 11 ? spawns:sox', 'line 13 chrome']);
    const undeclared = uses.flatMap((u) => [...u.names, ...(u.annotated ?? [])]).filter((n) => !DECLARED.has(n));
    assert.deepEqual(undeclared, ['ffmpeg', 'lame', 'chrome'], 'sox is declared; the others would fail the check below');
  });

  test('every program the code runs is declared in scripts/systemTools.mjs', () => {
    const undeclared = toolUses().flatMap((u) => [...u.names, ...(u.annotated ?? [])].filter((n) => !DECLARED.has(n)).map((n) => `${u.where} ${u.what} runs ${n}`));
    assert.deepEqual(undeclared, [], `not in scripts/systemTools.mjs (declare it with the package that provides it, so the bootstrap installs it):\n${undeclared.join('\n')}`);
  });

  test('every spawn site names what it runs, in code or in a `// spawns:` comment', () => {
    const unknown = toolUses().filter((u) => u.names.size === 0 && !u.annotated?.length).map((u) => `${u.where} ${u.what}`);
    assert.deepEqual(unknown, [], `cannot tell which program these run; add \`// spawns: <program>\` on the line or the line above:\n${unknown.join('\n')}`);
  });

  test('the Debian packages and base tools of the list are installed, from the package the list names', (t) => {
    const problems: string[] = [];
    for (const tool of TOOLS.filter((x) => x.source === 'apt' || x.source === 'base')) {
      const overridden = tool.override?.map((v) => process.env[v]).find(Boolean);
      const found = tool.file ? (existsSync(tool.file) ? tool.file : undefined) : onPath(tool.command!);
      if (overridden && (!found || path.resolve(overridden) !== found)) {
        t.diagnostic(`${tool.command ?? tool.file}: ${tool.override!.join('/')} points elsewhere; not checked`);
        continue;
      }
      if (!found) {
        problems.push(`${tool.command ?? tool.file} is not installed (package ${tool.package}; node scripts/bootstrap.mjs --test installs it as root)`);
        continue;
      }
      if (!HAS_DPKG) continue;
      const owners = owningPackages(found);
      if (!owners.includes(tool.package!)) {
        problems.push(`${found} comes from ${owners.length ? `package ${owners.join(', ')}` : 'no Debian package (installed by hand?)'}, not from ${tool.package} as scripts/systemTools.mjs says`);
      }
    }
    if (!HAS_DPKG) t.diagnostic('no dpkg-query here: where the tools come from was not checked');
    else assert.deepEqual(owningPackages(path.join(PROJECT_ROOT, 'package.json')), [], 'a file no package installed has no owner');
    assert.deepEqual(problems, [], problems.join('\n'));
  });

  test("the bootstrap's and the project's own tools are where the list says", () => {
    for (const tool of TOOLS.filter((x) => x.source === 'bootstrap' || x.source === 'project')) {
      if (tool.override?.some((v) => process.env[v])) continue;
      assert.ok(tool.path, `${tool.command} has a path`);
      assert.ok(existsSync(path.join(PROJECT_ROOT, tool.path)), `${tool.command} at ${tool.path}`);
    }
  });

  test('the bootstrap installs every missing apt package of the mode in one list, and only those', () => {
    const nothing = () => false;
    const aptOf = (mode: 'start' | 'test') => [
      ...new Set(TOOLS.filter((x) => x.for.includes(mode) && x.package && (x.source === 'apt' || x.source === 'prerequisite')).map((x) => x.package!)),
    ];
    assert.deepEqual(missingPackages('test', nothing, {}), aptOf('test'));
    assert.deepEqual(missingPackages('start', nothing, {}), aptOf('start'));
    for (const pkg of ['redis-server', 'chromium', 'maven', 'default-jre-headless', 'espeak-ng', 'festival', 'festvox-kallpc16k', 'pocketsphinx', 'pocketsphinx-en-us', 'sox']) {
      assert.ok(aptOf('test').includes(pkg), `npm test installs ${pkg}`);
    }
    for (const pkg of ['espeak-ng', 'festival', 'festvox-kallpc16k', 'pocketsphinx', 'pocketsphinx-en-us', 'sox']) {
      assert.ok(aptOf('start').includes(pkg), `npm start installs ${pkg}`);
    }
    assert.ok(!aptOf('start').includes('chromium') && !aptOf('start').includes('redis-server'), 'npm start needs no browser or Redis');
    assert.ok(!missingPackages('test', nothing, { REDIS_BIN: '/opt/redis-server' }).includes('redis-server'), 'an override skips its package');
    assert.deepEqual(missingPackages('test', () => true, {}), [], 'nothing when everything is there');
    assert.deepEqual(toolsFor('start').filter((x: SystemTool) => !x.for.includes('start')), []);
  });

  test(".ci/run runs the README's `npm test` and installs nothing itself", () => {
    const commands = readFileSync(path.join(PROJECT_ROOT, '.ci', 'run'), 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#') && !/^(set|cd|export)\b/.test(l));
    assert.deepEqual(commands, ['exec npm test </dev/null']);
  });
});
