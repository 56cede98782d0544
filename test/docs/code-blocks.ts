import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

/**
 * The code blocks of the README and docs/, as the docs test sees them. Every ```ts, ```tsx and
 * ```js block is type-checked against the package's own types (`fetch-pacer*` mapped to src by
 * the root tsconfig); a block whose info string also says `run` (```ts run) is executed too.
 * README blocks must stand alone, as a user pastes them; docs/ blocks may use the placeholders
 * declared in test/docs/placeholders.d.ts (`api`, `pacedFetch`, `limiter`, ...).
 */
export interface CodeBlock {
  /** Where it is: `docs/react.md:42` (the line of its opening fence). */
  readonly where: string;
  readonly page: string;
  /** The first line of its code in the page, 1-based. */
  readonly line: number;
  readonly language: 'ts' | 'tsx' | 'js';
  readonly run: boolean;
  readonly code: string;
}

export const root = resolve(import.meta.dirname, '../..');
const checked = new Set(['ts', 'tsx', 'js']);

/** README.md and every page under docs/, as paths relative to the root. */
export function pages(): string[] {
  const docs = readdirSync(join(root, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.md'))
    .map((file) => join('docs', file))
    .sort();
  return ['README.md', ...docs];
}

/** The fenced blocks of one page, in order (``` fences only, as the docs use). */
export function blocksOf(page: string, text: string): CodeBlock[] {
  const blocks: CodeBlock[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)(.*)$/.exec(lines[i] ?? '');
    if (!open) continue;
    const end = lines.findIndex((line, j) => j > i && line.startsWith('```'));
    if (end === -1) throw new Error(`${page}:${i + 1}: a code fence that never closes`);
    const language = open[1] ?? '';
    if (checked.has(language)) {
      blocks.push({
        where: `${page}:${i + 1}`,
        page,
        line: i + 2,
        language: language as CodeBlock['language'],
        run: /\brun\b/.test(open[2] ?? ''),
        code: lines.slice(i + 1, end).join('\n'),
      });
    }
    i = end;
  }
  return blocks;
}

export function allBlocks(): CodeBlock[] {
  return pages().flatMap((page) => blocksOf(page, readFileSync(join(root, page), 'utf8')));
}

// Git-ignored; a dot folder, so the root tsconfig's `include` does not pick the blocks up.
const generated = join(import.meta.dirname, '.blocks');
const placeholders = join(import.meta.dirname, 'placeholders.d.ts');

/** The file a block is checked (and run) as: one module per block. */
export function fileOf(block: CodeBlock, index: number): string {
  const name = `${block.page.replace(/[/.]/g, '-')}-${index}.${block.language}`;
  return join(generated, name);
}

/**
 * Type-checks every block in one program and returns one message per problem, each naming the
 * page and line: a TypeScript error, or a README block that leans on a docs placeholder.
 */
export function typeCheck(blocks: readonly CodeBlock[]): string[] {
  rmSync(generated, { recursive: true, force: true });
  mkdirSync(generated, { recursive: true });
  const files = blocks.map((block, index) => {
    const file = fileOf(block, index);
    writeFileSync(file, `${block.code}\n`);
    return file;
  });
  const config = ts.readConfigFile(join(root, 'tsconfig.json'), ts.sys.readFile).config;
  const { options } = ts.parseJsonConfigFileContent(config, ts.sys, root);
  const program = ts.createProgram([...files, placeholders], {
    ...options,
    noEmit: true,
    allowJs: true,
    checkJs: true,
    // Each block is a module of its own (top-level await, no names shared between blocks).
    moduleDetection: ts.ModuleDetectionKind.Force,
  });
  const byFile = new Map(files.map((file, index) => [resolve(file), blocks[index]]));
  const problems: string[] = [];
  const at = (block: CodeBlock, file: ts.SourceFile, position: number) =>
    `${block.page}:${block.line + file.getLineAndCharacterOfPosition(position).line}`;
  for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
    const block = diagnostic.file && byFile.get(resolve(diagnostic.file.fileName));
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
    if (!block || !diagnostic.file) {
      problems.push(`${diagnostic.file?.fileName ?? 'tsconfig'}: ${message}`);
      continue;
    }
    problems.push(`${at(block, diagnostic.file, diagnostic.start ?? 0)}: ${message}`);
  }
  // A README block runs as pasted: it may not use a name only the placeholders declare.
  const checker = program.getTypeChecker();
  for (const [file, block] of byFile) {
    if (block?.page !== 'README.md') continue;
    const source = program.getSourceFile(file);
    if (!source) continue;
    const visit = (node: ts.Node): void => {
      if (ts.isIdentifier(node)) {
        const declared = checker.getSymbolAtLocation(node)?.declarations ?? [];
        if (declared.some((d) => resolve(d.getSourceFile().fileName) === placeholders)) {
          problems.push(`${at(block, source, node.getStart())}: \`${node.text}\` is not defined`);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return problems;
}

/**
 * The block as a module vitest can import, its code (all but the imports) wrapped in an exported
 * `run()`: the test imports it on real timers, then runs it on fake ones. `fetch-pacer*`
 * specifiers point at the sources (the type-check maps them the same way), so no build is needed.
 */
export function runnableFile(block: CodeBlock, index: number): string {
  const file = fileOf(block, index).replace(/\.(tsx?|js)$/, '.run.$1');
  const source = ts.createSourceFile(file, block.code, ts.ScriptTarget.Latest);
  const text = (node: ts.Node) => block.code.slice(node.getFullStart(), node.end);
  const imports = source.statements.filter(ts.isImportDeclaration).map(text).join('');
  const body = source.statements.filter((node) => !ts.isImportDeclaration(node)).map(text);
  const entry = (subpath: string | undefined) => {
    const name = subpath ?? 'index';
    const folder = name === 'cross-tab' || name === 'redis' ? `stores/${name}` : name;
    return join(root, 'src', name === 'index' ? 'index.ts' : `${folder}/index.ts`);
  };
  const rewritten = imports.replace(
    /from '(fetch-pacer)(?:\/([a-z-]+))?'/g,
    (_match, _name, subpath: string | undefined) =>
      `from '${relative(dirname(file), entry(subpath)).replaceAll('\\', '/')}'`,
  );
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${rewritten}\nexport async function run() {${body.join('')}\n}\n`);
  return file;
}

/** `console.log(...); // expected` lines of a block, in order: what each log must print. */
export function expectedLogs(block: CodeBlock): string[] {
  return [...block.code.matchAll(/^\s*console\.log\(.*\);\s*\/\/ (.*)$/gm)].map(
    (match) => match[1] ?? '',
  );
}
