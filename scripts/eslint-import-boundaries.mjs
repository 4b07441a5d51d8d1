// An ESLint rule for the layer boundaries: a file may not import from the listed folders
// of the project. Relative specifiers are resolved against the importing file, so
// `../api/errors.js` from src/services and `../src/api/errors.js` from activities both
// count as src/api (the core no-restricted-imports only sees the specifier's text).
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The project-relative folder (one of `forbidden`) that `specifier` imported from `filename` lands in. */
function forbiddenTarget(filename, specifier, forbidden) {
  if (!specifier.startsWith('.')) return undefined;
  const target = path.relative(ROOT, path.resolve(path.dirname(filename), specifier)).split(path.sep).join('/');
  return forbidden.find((dir) => target === dir || target.startsWith(`${dir}/`) || target === `${dir}.js` || target === `${dir}.ts`);
}

const noImportFrom = {
  meta: {
    type: 'problem',
    docs: { description: 'Forbid imports (value and type) from the given project folders' },
    schema: [{
      type: 'object',
      properties: {
        folders: { type: 'array', items: { type: 'string' } },
        reason: { type: 'string' },
      },
      required: ['folders'],
      additionalProperties: false,
    }],
    messages: { forbidden: "'{{specifier}}' is in {{folder}}, which this layer may not import{{reason}}" },
  },
  create(context) {
    const { folders, reason } = context.options[0];
    const check = (node, source) => {
      if (!source || typeof source.value !== 'string') return;
      const folder = forbiddenTarget(context.filename, source.value, folders);
      if (folder) context.report({ node, messageId: 'forbidden', data: { specifier: source.value, folder, reason: reason ? ` (${reason})` : '' } });
    };
    return {
      ImportDeclaration: (node) => check(node, node.source),
      ExportNamedDeclaration: (node) => check(node, node.source),
      ExportAllDeclaration: (node) => check(node, node.source),
      ImportExpression: (node) => check(node, node.source.type === 'Literal' ? node.source : undefined),
      TSImportEqualsDeclaration: (node) => check(node, node.moduleReference.type === 'TSExternalModuleReference' ? node.moduleReference.expression : undefined),
    };
  },
};

export default { rules: { 'no-import-from': noImportFrom } };
