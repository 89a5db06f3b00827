import{a as r,b as o}from"./chunk-Q6NGPIAH.mjs";import"./chunk-ZS6VBONO.mjs";import"./chunk-AQ6EADP3.mjs";export{r as RailroadEbnfModule,o as createRailroadEbnfServices};
