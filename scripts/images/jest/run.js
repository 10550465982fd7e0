#!/usr/bin/env node
// sandcell's --lang jest: jest 29 run on the test files of the working
// directory (the request's code is main.test.ts), TypeScript or JavaScript
// compiled by babel as SandboxFusion's jest runtime does; modules such as
// @jest/globals come from this directory's node_modules, and the results go
// to jest-report.json as well. One process (--runInBand): no workers.
'use strict';
const path = require('path');
const dir = path.dirname(require('fs').realpathSync(__filename));
const mods = path.join(dir, 'node_modules');
const config = {
	rootDir: process.cwd(),
	transform: {'\\.[jt]sx?$': [path.join(mods, 'babel-jest'), {configFile: path.join(dir, 'babel.config.js')}]},
	modulePaths: [mods],
	testResultsProcessor: path.join(dir, 'report.js'),
	cacheDirectory: '/tmp/.sandcell-jest',
	watchman: false,
};
process.env.FORCE_COLOR = '0';
process.argv = [process.argv[0], 'jest', '--ci', '--runInBand', '--config', JSON.stringify(config)];
require(path.join(mods, 'jest', 'bin', 'jest.js'));
