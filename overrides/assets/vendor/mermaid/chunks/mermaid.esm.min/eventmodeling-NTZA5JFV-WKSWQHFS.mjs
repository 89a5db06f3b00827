import{a as e,b as o}from"./chunk-OJINMHTS.mjs";import"./chunk-ZS6VBONO.mjs";import"./chunk-AQ6EADP3.mjs";export{e as EventModelingModule,o as createEventModelingServices};
