/* The report page's script (html.c), which the diff page (cmd/diff.c)
 * shares: one function run at load. It zooms and pans the timeline lanes (by
 * their viewBox), shows tooltips, draws the views of many ranks on <canvas>
 * from the page's rank data (html_ranks.c), fills and sorts the tables. It
 * reads the elements and JSON blocks html.c and html_ranks.c write (#tl,
 * #tl-names, #tl-ops, .chart svg, #rank-data, canvas.strip, canvas.hm,
 * #wait-ranks, table.sort), skips those a page lacks, and sets
 * body[data-ready] last. No library, no network: the page opens from file://.
 * This comment and lines that start with // stay out of the page
 * (reporter/out/page.mk). */
(function(){'use strict';
function fmt(ns){var a=Math.abs(ns);if(a<1e3)return ns.toFixed(0)+' ns';if(a<1e6)return (ns/1e3).toFixed(1)+' \u00b5s';if(a<1e9)return (ns/1e6).toFixed(2)+' ms';return (ns/1e9).toFixed(3)+' s';}
var svg=document.getElementById('tl'),tip=document.getElementById('tip');
if(svg){
 Array.prototype.forEach.call(svg.querySelectorAll('g[data-r]'),function(g){var ops=g.hasAttribute('data-ot'),frag=document.createDocumentFragment();
  g.getAttribute('data-r').split(';').forEach(function(it){if(!it)return;var f=it.split(','),r=document.createElementNS('http://www.w3.org/2000/svg','rect'),i=ops?4:3;
   r.setAttribute('x',f[0]);r.setAttribute('width',f[1]);r.setAttribute('data-n',f[2]);if(ops)r.setAttribute('data-o',f[3]);
   if(f.length>i){r.setAttribute('data-k',f[i]);r.setAttribute('data-b',f[i+1]);r.setAttribute('fill-opacity',f[i+2]);}
   frag.appendChild(r);});
  g.removeAttribute('data-r');g.appendChild(frag);});
 var W=+svg.getAttribute('data-w'),H=+svg.getAttribute('data-h'),span=+svg.getAttribute('data-span');
 var names=JSON.parse(document.getElementById('tl-names').textContent);
 var ops=JSON.parse(document.getElementById('tl-ops').textContent);
 var ax=document.getElementById('tl-axis'),rng=document.getElementById('tl-range');
 var off=+svg.getAttribute('data-off'),vx=0,vw=W,drag=null;
 var draw=function(){if(vw<W/1e5)vw=W/1e5;if(vw>W)vw=W;if(vx<0)vx=0;if(vx+vw>W)vx=W-vw;
  svg.setAttribute('viewBox',vx+' 0 '+vw+' '+H);
  var t0=vx/W*span+off,t1=(vx+vw)/W*span+off,r=(t1-t0)/8,p=Math.pow(10,Math.floor(Math.log10(r)));
  var st=r/p<2?2*p:r/p<5?5*p:10*p;ax.textContent='';
  for(var t=Math.ceil(t0/st)*st;t<=t1;t+=st){var s=document.createElement('span');s.style.left=((t-t0)/(t1-t0)*100)+'%';s.textContent=fmt(t);ax.appendChild(s);}
  rng.textContent=fmt(t0)+' \u2013 '+fmt(t1)+' ('+fmt(t1-t0)+' shown)';};
 var zoom=function(k,c){var at=vx+vw*c;vw*=k;if(vw<W/1e5)vw=W/1e5;if(vw>W)vw=W;vx=at-vw*c;draw();};
 svg.addEventListener('wheel',function(e){e.preventDefault();var r=svg.getBoundingClientRect();zoom(e.deltaY<0?0.8:1.25,(e.clientX-r.left)/r.width);},{passive:false});
 svg.addEventListener('mousedown',function(e){drag={x:e.clientX,vx:vx};svg.style.cursor='grabbing';e.preventDefault();});
 window.addEventListener('mouseup',function(){drag=null;svg.style.cursor='';});
 window.addEventListener('mousemove',function(e){if(!drag)return;var r=svg.getBoundingClientRect();vx=drag.vx-(e.clientX-drag.x)/r.width*vw;draw();});
 document.getElementById('tl-in').onclick=function(){zoom(0.5,0.5);};
 document.getElementById('tl-out').onclick=function(){zoom(2,0.5);};
 document.getElementById('tl-reset').onclick=function(){vx=0;vw=W;draw();};
 // The step chart: a click shows its step on the timeline; a drag across
 // bars (mousedown on one, mouseup on another) picks a stretch of steps:
 // shown there too, its flame command said.
 var steps=document.getElementById('step-bars'),pick=document.getElementById('step-pick'),from=null;
 var bar=function(e){var g=e.target.parentNode;return g&&g.hasAttribute&&g.hasAttribute('data-s')?g:null;};
 if(steps){steps.addEventListener('click',function(e){var g=bar(e);if(!g)return;var s=+g.getAttribute('data-s'),d=+g.getAttribute('data-d');vx=(s-d*0.05-off)/span*W;vw=d*1.1/span*W;draw();if(pick)pick.textContent='';Array.prototype.forEach.call(steps.querySelectorAll('g[data-a]'),function(x){x.style.opacity='';});svg.scrollIntoView({block:'center'});});
  steps.addEventListener('mousedown',function(e){from=bar(e);if(from)e.preventDefault();});
  steps.addEventListener('mouseup',function(e){var a=from,b=bar(e);from=null;if(!a||!b)return;
   if(+b.getAttribute('data-s')<+a.getAttribute('data-s')){var t=a;a=b;b=t;}
   var s=+a.getAttribute('data-s'),end=+b.getAttribute('data-s')+(+b.getAttribute('data-d')),lo=+a.getAttribute('data-a'),hi=+b.getAttribute('data-b');
   if(a===b)return;
   vx=(s-(end-s)*0.05-off)/span*W;vw=(end-s)*1.1/span*W;draw();
   Array.prototype.forEach.call(steps.querySelectorAll('g[data-a]'),function(g){g.style.opacity=+g.getAttribute('data-a')>=lo&&+g.getAttribute('data-b')<=hi?'':'0.35';});
   if(pick)pick.textContent='Steps '+lo+' to '+hi+' ('+fmt(end-s)+'), shown on the timeline. Their flame graphs: ringside flame '+pick.getAttribute('data-dir')+' --steps '+lo+'-'+hi+' (add --kind wait or --kind gpu).';});}
 document.getElementById('tl-left').onclick=function(){vx-=vw/4;draw();};
 document.getElementById('tl-right').onclick=function(){vx+=vw/4;draw();};
 svg.addEventListener('mousemove',function(e){var t=e.target,g=t.parentNode;
  if(drag||t.tagName!=='rect'||!g.hasAttribute('data-m')){tip.style.display='none';return;}
  var nm=names[+g.getAttribute('data-m')]||[],x=+t.getAttribute('x'),w=+t.getAttribute('width'),txt,o=t.getAttribute('data-o'),ot=g.getAttribute('data-ot');
  var label=nm[+t.getAttribute('data-n')]||'';
  if(o!==null&&ops[ot])label=(ops[ot][+o]||'')+(label?' '+label:'');
  var at=' at '+fmt(x/W*span+off)+', '+g.getAttribute('data-lane');
  if(t.hasAttribute('data-t'))txt=t.getAttribute('data-t')+'\n'+fmt(w/W*span)+at;
  else if(t.hasAttribute('data-k'))txt=t.getAttribute('data-k')+' operations merged (each narrower than a pixel at full view)\nbusy '+fmt(+t.getAttribute('data-b'))+' in '+fmt(w/W*span)+at+'\nlongest: '+label;
  else txt=label+'\n'+fmt(w/W*span)+at;
  showTip(e,txt);});
 svg.addEventListener('mouseleave',function(){tip.style.display='none';});
 draw();
}
Array.prototype.forEach.call(document.querySelectorAll('.chart svg'),function(c){
 var a=function(k){return +c.getAttribute('data-'+k);},x0=a('x0'),x1=a('x1'),y0=a('y0'),y1=a('y1'),top=a('top');
 c.addEventListener('mousemove',function(e){var r=c.getBoundingClientRect(),x=(e.clientX-r.left)/r.width*600;
  if(x<x0||x>x1){tip.style.display='none';return;}
  var txt=fmt((x-x0)/(x1-x0)*a('span')+a('off'));
  Array.prototype.forEach.call(c.querySelectorAll('polyline'),function(pl){var pts=pl.points,best=null;
   for(var i=0;i<pts.numberOfItems;i++){var q=pts.getItem(i);if(!best||Math.abs(q.x-x)<Math.abs(best.x-x))best=q;}
   if(best)txt+='\n'+pl.getAttribute('data-r')+': '+((y1-best.y)/(y1-y0)*top).toPrecision(3)+' '+c.getAttribute('data-unit');});
  showTip(e,txt);});
 c.addEventListener('mouseleave',function(){tip.style.display='none';});});
function showTip(e,txt){tip.textContent=txt;tip.style.display='block';tip.style.left=Math.min(e.clientX+12,window.innerWidth-320)+'px';tip.style.top=(e.clientY+14)+'px';}
function hideTip(){tip.style.display='none';}
var rd=document.getElementById('rank-data'),D=rd?JSON.parse(rd.textContent):null;
function nice(v){if(!(v>0))return 1;var p=Math.pow(10,Math.floor(Math.log10(v))),m=v/p;return (m<=1?1:m<=2?2:m<=5?5:10)*p;}
function step(r,n){var raw=r/n,p=Math.pow(10,Math.floor(Math.log10(raw))),m=raw/p;return (m<2?2:m<5?5:10)*p;}
function canvas2d(c,h){var dpr=window.devicePixelRatio||1,w=c.clientWidth;c.width=Math.max(1,Math.round(w*dpr));c.height=Math.round(h*dpr);c.style.height=h+'px';var x=c.getContext('2d');x.setTransform(dpr,0,0,dpr,0,0);x.clearRect(0,0,w,h);x.font='10px system-ui,sans-serif';return {x:x,w:w,h:h};}
function fval(f,v){return f.unit==='us'?fmt(v*1e3):v.toFixed(1)+'%';}
var ramps={gpu_busy_pct:['#440154','#3b528b','#21918c','#5ec962','#fde725'],comm_gbs:['#fcfdbf','#fc8961','#b73779','#51127c','#000004'],
 read_mbs:['#f7fcf5','#a1d99b','#41ab5d','#006d2c','#00441b'],write_mbs:['#fff5eb','#fdae6b','#f16913','#d94801','#7f2704']};
function rgbOf(h){return [parseInt(h.slice(1,3),16),parseInt(h.slice(3,5),16),parseInt(h.slice(5,7),16)];}
function ramp(stops){var c=stops.map(rgbOf),out=[];for(var i=0;i<64;i++){var t=i/63*(c.length-1),k=Math.min(c.length-2,Math.floor(t)),u=t-k;
 out.push([0,1,2].map(function(j){return Math.round(c[k][j]+(c[k+1][j]-c[k][j])*u);}));}return out;}
function rankName(r,i){return r===null||r===undefined?'process '+i:'rank '+r;}
function drawStrip(c){var f=D.figs[+c.getAttribute('data-f')];if(!f)return;
 var g=canvas2d(c,50),x=g.x,L=6,R=g.w-6,pts=[],vals=[];
 D.procs.forEach(function(p,i){var v=p[f.col];if(v!==null&&v!==undefined)vals.push([v,i]);});
 var lo=Math.min(f.lo,f.q1),hi=Math.max(f.hi,f.q3);vals.forEach(function(a){lo=Math.min(lo,a[0]);hi=Math.max(hi,a[0]);});
 if(f.unit==='%'){lo=Math.max(lo,0);hi=Math.min(Math.max(hi,lo+1),100);}if(f.unit==='us')lo=Math.max(lo,0);
 if(hi<=lo)hi=lo+1;var pad=(hi-lo)*0.03;lo-=pad;hi+=pad;
 var X=function(v){return L+(v-lo)/(hi-lo)*(R-L);};
 x.fillStyle='#e6f4ea';x.fillRect(X(Math.max(f.lo,lo)),2,X(Math.min(f.hi,hi))-X(Math.max(f.lo,lo)),32);
 x.strokeStyle='#57606a';x.lineWidth=1;x.strokeRect(X(f.q1),6,Math.max(1,X(f.q3)-X(f.q1)),24);
 x.beginPath();x.moveTo(X(f.med),3);x.lineTo(X(f.med),33);x.lineWidth=2;x.stroke();x.lineWidth=1;
 var out=[];vals.forEach(function(a){var j=((a[1]*2654435761)>>>0)%997/997,px=X(a[0]),py=5+j*26,o=a[0]<f.lo||a[0]>f.hi;
  pts.push([px,py,a[1],a[0]]);if(o){out.push([px,py,a[1]]);return;}x.fillStyle='rgba(9,105,218,0.45)';x.fillRect(px-1.5,py-1.5,3,3);});
 x.fillStyle='#d1242f';out.forEach(function(o){x.beginPath();x.arc(o[0],o[1],3.5,0,7);x.fill();});
 out.slice(0,6).forEach(function(o){var lx=o[0]+6,right=lx>R-50;x.textAlign=right?'right':'left';x.fillText(D.procs[o[2]][0],right?o[0]-6:lx,o[1]+3);});
 x.textAlign='center';
 x.fillStyle='#57606a';var st=step(hi-lo,5);for(var t=Math.ceil(lo/st)*st;t<=hi;t+=st){x.fillRect(X(t),34,1,3);
  x.fillText(f.unit==='us'?fmt(t*1e3):(+t.toPrecision(6))+'%',Math.min(Math.max(X(t),18),R-18),46);}
 c.onmousemove=function(e){var r=c.getBoundingClientRect(),mx=e.clientX-r.left,my=e.clientY-r.top,best=null,bd=64;
  pts.forEach(function(q){var d=(q[0]-mx)*(q[0]-mx)+(q[1]-my)*(q[1]-my);if(d<bd){bd=d;best=q;}});
  if(!best){hideTip();return;}showTip(e,D.procs[best[2]][0]+': '+fval(f,best[3])+' (median '+fval(f,f.med)+')');};
 c.onmouseleave=hideTip;}
function drawHeat(c){var s=null;D.heat.series.forEach(function(q){if(q.key===c.getAttribute('data-s'))s=q;});if(!s)return;
 var H=D.heat,n=s.rows.length,nb=0,lv={};for(var i=0;i<64;i++)lv[H.levels.charAt(i)]=i;
 s.rows.forEach(function(r){nb=Math.max(nb,r.length);});if(!n||!nb)return;
 var grp=Math.ceil(n/Math.min(n,400)),nr=Math.ceil(n/grp),rh=grp>1?1:Math.max(1,Math.min(12,Math.floor(400/n))),ph=nr*rh;
 var g=canvas2d(c,ph+44),x=g.x,L=50,T=4,pw=Math.max(10,g.w-L-8);
 var lev=new Int8Array(n*nb),med=new Float64Array(nb),cnt=new Int32Array(65);
 for(var r=0;r<n;r++)for(var b=0;b<nb;b++){var ch=s.rows[r].charAt(b);lev[r*nb+b]=ch in lv?lv[ch]:-1;}
 for(b=0;b<nb;b++){cnt.fill(0);var k=0;for(r=0;r<n;r++){var v=lev[r*nb+b];if(v>=0){cnt[v]++;k++;}}
  var half=k/2,acc=0;for(v=0;v<64;v++){acc+=cnt[v];if(acc>=half){med[b]=v;break;}}}
 var pick=new Int32Array(nr*nb),col=ramp(ramps[s.key]||ramps.gpu_busy_pct),img=x.createImageData(nb,nr);
 for(var row=0;row<nr;row++)for(b=0;b<nb;b++){var best=-1,bd=-1;
  for(r=row*grp;r<Math.min(n,row*grp+grp);r++){v=lev[r*nb+b];if(v<0)continue;var d=Math.abs(v-med[b]);if(d>bd){bd=d;best=r;}}
  pick[row*nb+b]=best;var o=(row*nb+b)*4,cc=best<0?[246,248,250]:col[lev[best*nb+b]];
  img.data[o]=cc[0];img.data[o+1]=cc[1];img.data[o+2]=cc[2];img.data[o+3]=255;}
 var off=document.createElement('canvas');off.width=nb;off.height=nr;off.getContext('2d').putImageData(img,0,0);
 x.imageSmoothingEnabled=false;x.drawImage(off,L,T,pw,ph);
 var span=nb*H.bin_us,t0=-H.shift_us,X=function(us){return L+(us-t0)/span*pw;};
 if(H.window_s){var a=X(H.window_s[0]*1e6),z=X(H.window_s[1]*1e6);x.strokeStyle='#d1242f';x.lineWidth=2;
  x.strokeRect(Math.max(a,L),T+1,Math.min(z,L+pw)-Math.max(a,L),ph-2);x.lineWidth=1;}
 x.fillStyle='#57606a';x.textAlign='right';var rs=Math.max(1,step(n,Math.min(8,n)));
 for(r=0;r<n;r+=rs){var rn=H.ranks[r]===null?'#'+r:String(H.ranks[r]);x.fillText(r?rn:'rank '+rn,L-4,T+Math.floor(r/grp)*rh+rh/2+3);}
 x.textAlign='center';var ts=step(span,8);
 for(var t=Math.ceil(t0/ts)*ts;t<=t0+span+1e-9;t+=ts){x.fillRect(X(t),T+ph,1,3);x.fillText(fmt(t*1e3),Math.min(Math.max(X(t),24),L+pw-24),T+ph+13);}
 var ly=T+ph+22;for(i=0;i<64;i++){x.fillStyle='rgb('+col[i].join(',')+')';x.fillRect(L+i*3,ly,3,8);}
 x.fillStyle='#57606a';x.textAlign='left';x.fillText('0',L-8,ly+8);x.fillText((+s.max.toPrecision(4))+' '+s.unit,L+196,ly+8);
 c.onmousemove=function(e){var q=c.getBoundingClientRect(),mx=e.clientX-q.left-L,my=e.clientY-q.top-T;
  if(mx<0||mx>=pw||my<0||my>=ph){hideTip();return;}
  var bb=Math.min(nb-1,Math.floor(mx/pw*nb)),rr=Math.min(nr-1,Math.floor(my/rh)),who=pick[rr*nb+bb];if(who<0){hideTip();return;}
  var lvl=lev[who*nb+bb],val=lvl/63*s.max,bt=t0+bb*H.bin_us;
  var txt=rankName(H.ranks[who],who)+'\n'+fmt(bt*1e3)+' \u2013 '+fmt((bt+H.bin_us)*1e3)+'\n'+s.title+' \u2248 '+(+val.toPrecision(3))+' '+s.unit;
  if(grp>1)txt+='\n(this row: '+rankName(H.ranks[rr*grp],rr*grp)+' to '+rankName(H.ranks[Math.min(n,rr*grp+grp)-1],Math.min(n,rr*grp+grp)-1)+', the one furthest from the median shown)';
  showTip(e,txt);};
 c.onmouseleave=hideTip;}
function drawWait(c){var f=null;D.figs.forEach(function(q){if(q&&q.id==='wait')f=q;});if(!f)return;var rows=[];D.procs.forEach(function(p,i){if(p[f.col]!==null&&p[f.col]!==undefined)rows.push([p[f.col],i]);});
 var n=rows.length;if(!n)return;var g=canvas2d(c,150),x=g.x,L=70,T=6,ph=120,pw=Math.max(10,g.w-L-8),top=0;
 rows.forEach(function(a){top=Math.max(top,a[0]);});top=nice(top);
 var Y=function(v){return T+ph-v/top*ph;},bw=pw/n;
 x.fillStyle='#57606a';x.textAlign='right';for(var k=0;k<=2;k++){var v=top*k/2;x.fillRect(L-3,Y(v),pw+3,k?0.5:1);x.fillText(fmt(v*1e3),L-4,Y(v)+3);}
 var out=[];rows.forEach(function(a,i){var o=a[0]<f.lo||a[0]>f.hi;if(o){out.push([a,i]);return;}
  x.fillStyle='#8c959f';x.fillRect(L+i*bw,Y(a[0]),Math.max(1,bw-(bw>3?1:0)),T+ph-Y(a[0]));});
 x.strokeStyle='#0969da';x.setLineDash([4,3]);x.beginPath();x.moveTo(L,Y(f.med));x.lineTo(L+pw,Y(f.med));x.stroke();x.setLineDash([]);
 x.textAlign='center';out.forEach(function(o){var px=L+o[1]*bw;x.fillStyle='#d1242f';x.fillRect(px,Y(o[0][0]),Math.max(1,bw-(bw>3?1:0)),T+ph-Y(o[0][0]));
  x.beginPath();x.arc(px+bw/2,Math.min(Y(o[0][0]),T+ph-4),3.5,0,7);x.fill();});
 out.slice(0,6).forEach(function(o){x.fillText(D.procs[o[0][1]][0],Math.min(Math.max(L+o[1]*bw+bw/2,24),L+pw-24),Math.max(T+9,Math.min(Y(o[0][0]),T+ph-4)-7));});
 x.fillStyle='#57606a';x.fillText(rows.length+' ranks by rank order; dashed: the median',L+pw/2,T+ph+16);
 c.onmousemove=function(e){var q=c.getBoundingClientRect(),mx=e.clientX-q.left-L;if(mx<0||mx>=pw){hideTip();return;}
  var a=rows[Math.min(n-1,Math.floor(mx/bw))];showTip(e,D.procs[a[1]][0]+': waited '+fmt(a[0]*1e3)+' in collectives (median '+fmt(f.med*1e3)+')');};
 c.onmouseleave=hideTip;}
function fillProcs(){var t=document.getElementById('table-processes');if(!t||!D)return;
 var kinds=Array.prototype.map.call(t.tHead.rows[0].cells,function(h){return h.getAttribute('data-k');}),cols=Array.prototype.map.call(t.tHead.rows[0].cells,function(h){return +h.getAttribute('data-c');}),frag=document.createDocumentFragment();
 D.procs.forEach(function(p){var tr=document.createElement('tr');kinds.forEach(function(k,j){var td=document.createElement('td'),v=p[cols[j]];
  if(k==='host')td.textContent=D.hosts[v];else if(k==='text')td.textContent=v||'';
  else if(v!==null&&v!==undefined){td.className='n';var num=k==='pair'?v[0]:v;td.setAttribute('data-v',num);
   td.textContent=k==='us'?fmt(v*1e3):k==='pct'?v.toFixed(1):k==='pair'?v[0]+' / '+v[1]:String(Math.round(v));}
  tr.appendChild(td);});frag.appendChild(tr);});t.tBodies[0].appendChild(frag);}
function drawRanks(){if(!D)return;
 Array.prototype.forEach.call(document.querySelectorAll('canvas.strip'),drawStrip);
 if(D.heat)Array.prototype.forEach.call(document.querySelectorAll('canvas.hm'),drawHeat);
 var w=document.getElementById('wait-ranks');if(w)drawWait(w);}
fillProcs();drawRanks();
var rsz=null;window.addEventListener('resize',function(){clearTimeout(rsz);rsz=setTimeout(drawRanks,150);});
Array.prototype.forEach.call(document.querySelectorAll('table.sort th'),function(th,i){
 th.addEventListener('click',function(){var tb=th.closest('table').tBodies[0];var up=!th.classList.contains('asc');
  Array.prototype.forEach.call(th.parentNode.children,function(h){h.classList.remove('asc','desc');});th.classList.add(up?'asc':'desc');
  var rows=Array.prototype.slice.call(tb.rows),num=th.classList.contains('n');
  var key=function(r){var c=r.cells[i];if(!c)return num?-Infinity:'';return num?+(c.getAttribute('data-v')||'-Infinity'):c.textContent;};
  rows.sort(function(a,b){var x=key(a),y=key(b),c=num?x-y:String(x).localeCompare(y);return up?c:-c;});
  rows.forEach(function(r){tb.appendChild(r);});});});
document.body.setAttribute('data-ready','1');
})();
