// sandcell's --lang jest: test files in TypeScript or JavaScript, compiled
// for the node that runs them (as SandboxFusion's jest runtime does)
module.exports = {
	presets: [['@babel/preset-env', {targets: {node: 'current'}}], '@babel/preset-typescript'],
};
