"use strict";
module.exports = require("./lib/jest-preset.js");
